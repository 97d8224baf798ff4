//! The simulator's calendar of events: what happens at each second, in
//! the order it was scheduled.
//!
//! Every event falls on a whole second, and a second holds tens of them
//! (a pool's polls are spread over POLLING_INTERVAL), so the calendar
//! keeps one FIFO list per second rather than a heap of every event: a
//! heap of tens of thousands of entries pays a sift of some fifteen cache
//! misses for each event, where a list pays one push and one pop, and
//! the map of seconds is walked once per second. Ties keep the order
//! they were scheduled in, as the reports' determinism needs.

use std::collections::{BTreeMap, VecDeque};

pub(crate) struct Calendar<E> {
    /// The events of each second that has any, in the order scheduled.
    seconds: BTreeMap<i64, VecDeque<E>>,
    /// Lists of seconds gone by, kept to hold later seconds' events
    /// without allocating.
    spare: Vec<VecDeque<E>>,
}

impl<E> Calendar<E> {
    pub(crate) fn new() -> Calendar<E> {
        Calendar {
            seconds: BTreeMap::new(),
            spare: Vec::new(),
        }
    }

    /// Schedules `ev` at `at`, after everything already there.
    pub(crate) fn push(&mut self, at: i64, ev: E) {
        let spare = &mut self.spare;
        self.seconds
            .entry(at)
            .or_insert_with(|| spare.pop().unwrap_or_default())
            .push_back(ev);
    }

    /// The earliest event, if it falls at or before `until`, with its time.
    pub(crate) fn pop_until(&mut self, until: i64) -> Option<(i64, E)> {
        let mut first = self.seconds.first_entry()?;
        let at = *first.key();
        if at > until {
            return None;
        }
        let ev = first.get_mut().pop_front();
        if first.get().is_empty() {
            self.spare.push(first.remove());
        }
        // A second is in the map only while it holds an event.
        ev.map(|ev| (at, ev))
    }
}

#[cfg(test)]
mod tests {
    use super::Calendar;

    #[test]
    fn time_order_then_scheduling_order() {
        let mut c = Calendar::new();
        c.push(5, "a");
        c.push(3, "b");
        c.push(5, "c");
        c.push(3, "d");
        assert_eq!(c.pop_until(10), Some((3, "b")));
        c.push(3, "e");
        assert_eq!(c.pop_until(10), Some((3, "d")));
        assert_eq!(c.pop_until(10), Some((3, "e")));
        assert_eq!(c.pop_until(4), None);
        assert_eq!(c.pop_until(5), Some((5, "a")));
        c.push(5, "f");
        assert_eq!(c.pop_until(5), Some((5, "c")));
        assert_eq!(c.pop_until(5), Some((5, "f")));
        assert_eq!(c.pop_until(i64::MAX), None);
    }
}
