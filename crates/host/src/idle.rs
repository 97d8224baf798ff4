//! Keyboard and console idle time, measured the way HTCondor's
//! `sysapi_idle_time` measures it on Linux (`condor_sysapi/idle_time.cpp`,
//! read for its behaviour, not its code):
//!
//! - **KeyboardIdle** is the time since the most recent access of any
//!   terminal: every `/dev/tty*`, `/dev/pty*` and `/dev/pts/*` device, by
//!   its access time. This is HTCondor's `STARTD_HAS_BAD_UTMP = True`
//!   path; its default path stats only the terminals `utmp` lists as
//!   logged in, which finds the same most recent access when the owner
//!   is at a login terminal, and we do not read `utmp`.
//! - **ConsoleIdle** is the time since the console devices
//!   (`CONSOLE_DEVICES`, default `mouse, console`: `/dev/mouse` and
//!   `/dev/console`) were last accessed, or since the keyboard and mouse
//!   last raised an interrupt, whichever is more recent. Interrupts are
//!   counted in `/proc/interrupts`: the keyboard is the first line naming
//!   `i8042` or `keyboard`, the mouse the second `i8042` line or one
//!   naming `mouse`; any change in their summed per-CPU counts between
//!   two readings is activity (USB input raises no such interrupts).
//!   Before the first change the devices count as used when they were
//!   first seen, as HTCondor assumes; without such lines they are idle
//!   forever.
//! - KeyboardIdle is then lowered to ConsoleIdle where that is smaller.
//!
//! As in HTCondor, a device that does not exist reads as last used at the
//! epoch (idle `now` seconds), devices that share `/dev/null`'s major
//! number never count, an access time in the future reads as 0, and
//! "never" is `INT_MAX` seconds ([`INFINITE_IDLE`]). There is no
//! `condor_kbdd` here, so no X events.

use std::os::unix::fs::MetadataExt;

use crate::Root;

/// HTCondor's idle time for "no activity ever seen": `INT_MAX` seconds.
pub const INFINITE_IDLE: i64 = i32::MAX as i64;

/// Summed interrupt counts of the keyboard and the mouse, where
/// `/proc/interrupts` has a line for them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InputInterrupts {
    pub keyboard: Option<u64>,
    pub mouse: Option<u64>,
}

impl InputInterrupts {
    /// Whether either device was found.
    pub fn any(&self) -> bool {
        self.keyboard.is_some() || self.mouse.is_some()
    }
}

/// The per-CPU counts after `IRQ:` on an interrupt line, summed (wrapping:
/// only a change matters).
fn summed_counts(line: &str) -> u64 {
    line.split_whitespace()
        .skip(1)
        .map_while(|t| t.parse::<u64>().ok())
        .fold(0u64, u64::wrapping_add)
}

/// Finds the keyboard and mouse lines of `/proc/interrupts` (the header
/// line is skipped): the keyboard is the first line with `i8042` or
/// `keyboard`; the mouse is the second `i8042` line, or the first with
/// `mouse` or `Mouse` that is not the first `i8042` line.
pub fn parse_interrupts(text: &str) -> InputInterrupts {
    let mut out = InputInterrupts::default();
    let mut seen_i8042 = false;
    for line in text.lines().skip(1) {
        let i8042 = line.contains("i8042");
        if out.keyboard.is_none() && (i8042 || line.contains("keyboard")) {
            out.keyboard = Some(summed_counts(line));
        }
        if out.mouse.is_none() {
            if i8042 && !seen_i8042 {
                seen_i8042 = true;
            } else if i8042 || line.contains("mouse") || line.contains("Mouse") {
                out.mouse = Some(summed_counts(line));
            }
        }
    }
    out
}

/// Seconds since `path` (under `root`'s `dev/`) was last accessed, at
/// `now`: see the module's rules.
pub fn dev_idle_time(root: &Root, name: &str, now: i64, null_major: Option<u32>) -> i64 {
    if name.is_empty() || name.starts_with("unix:") {
        return now;
    }
    let atime = match std::fs::metadata(root.path("dev").join(name)) {
        Ok(m) if null_major == Some(rustix::fs::major(m.rdev())) => 0,
        Ok(m) => m.atime(),
        Err(_) => 0,
    };
    if atime > now {
        0
    } else {
        now - atime
    }
}

/// The major device number of `/dev/null`, when it is a device.
pub fn null_major(root: &Root) -> Option<u32> {
    let m = std::fs::metadata(root.path("dev/null")).ok()?;
    let t = m.file_type();
    (!t.is_file() && !t.is_dir() && !t.is_symlink()).then(|| rustix::fs::major(m.rdev()))
}

/// The smallest idle time of every terminal: `dev/tty*`, `dev/pty*` and
/// everything in `dev/pts/`; [`INFINITE_IDLE`] when there is none.
pub fn all_pty_idle_time(root: &Root, now: i64, null_major: Option<u32>) -> i64 {
    let mut answer = INFINITE_IDLE;
    let names = |dir: &str| -> Vec<String> {
        std::fs::read_dir(root.path(dir))
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| e.file_name().into_string().ok())
                    .collect()
            })
            .unwrap_or_default()
    };
    for name in names("dev") {
        if name.starts_with("tty") || name.starts_with("pty") {
            answer = answer.min(dev_idle_time(root, &name, now, null_major));
        }
    }
    for name in names("dev/pts") {
        answer = answer.min(dev_idle_time(root, &format!("pts/{name}"), now, null_major));
    }
    answer
}

/// Seconds since the keyboard and console were last used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdleTimes {
    pub keyboard_idle: i64,
    pub console_idle: i64,
}

/// What must be remembered between readings to see input-device activity:
/// the last interrupt counts and when they last changed.
#[derive(Clone, Debug)]
pub struct IdleTracker {
    /// Device names under `/dev` (`CONSOLE_DEVICES`, `/dev/` prefixes
    /// taken off).
    console_devices: Vec<String>,
    last: Option<InputInterrupts>,
    last_activity: i64,
}

impl IdleTracker {
    /// A tracker for these console devices (`CONSOLE_DEVICES` as written:
    /// a comma or space separated list; `/dev/` prefixes are optional).
    pub fn new(console_devices: &str) -> IdleTracker {
        IdleTracker {
            console_devices: console_devices
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|s| !s.is_empty())
                .map(|s| s.strip_prefix("/dev/").unwrap_or(s).to_string())
                .collect(),
            last: None,
            last_activity: 0,
        }
    }

    /// HTCondor's default `CONSOLE_DEVICES`.
    pub fn with_default_devices() -> IdleTracker {
        IdleTracker::new("mouse, console")
    }

    /// Seconds since the keyboard or mouse raised an interrupt, given this
    /// reading's counts (`None` when `/proc/interrupts` could not be read).
    pub fn interrupt_idle_time(&mut self, current: Option<InputInterrupts>, now: i64) -> i64 {
        let current = current.filter(InputInterrupts::any);
        match (self.last, current) {
            (None, None) => INFINITE_IDLE,
            (None, Some(c)) => {
                self.last = Some(c);
                self.last_activity = now;
                0
            }
            (Some(_), None) => now - self.last_activity,
            (Some(l), Some(c)) => {
                if l != c {
                    self.last = Some(c);
                    self.last_activity = now;
                }
                now - self.last_activity
            }
        }
    }

    /// Measures both idle times under `root` at `now`.
    pub fn measure(&mut self, root: &Root, now: i64) -> IdleTimes {
        let null = null_major(root);
        let mut keyboard = all_pty_idle_time(root, now, null);
        let mut console: Option<i64> = None;
        for dev in &self.console_devices {
            let t = dev_idle_time(root, dev, now, null);
            keyboard = keyboard.min(t);
            console = Some(console.map_or(t, |c| c.min(t)));
        }
        let counts = root
            .read_optional("proc/interrupts")
            .map(|t| parse_interrupts(&t));
        let interrupt = self.interrupt_idle_time(counts, now);
        let console = console.map_or(interrupt, |c| c.min(interrupt));
        IdleTimes {
            keyboard_idle: keyboard.min(console),
            console_idle: console,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A laptop's `/proc/interrupts` with a PS/2 keyboard and touchpad.
    const PS2: &str = "\
           CPU0       CPU1
  0:         34          0   IO-APIC    2-edge      timer
  1:       1200         34   IO-APIC    1-edge      i8042
  8:          0          1   IO-APIC    8-edge      rtc0
 12:       5000          7   IO-APIC   12-edge      i8042
";

    #[test]
    fn keyboard_is_the_first_i8042_line_and_mouse_the_second() {
        assert_eq!(
            parse_interrupts(PS2),
            InputInterrupts {
                keyboard: Some(1234),
                mouse: Some(5007)
            }
        );
    }

    #[test]
    fn named_keyboard_and_mouse_lines() {
        let t = "  CPU0\n  1:  10  XT-PIC  keyboard\n 12:  20  XT-PIC  PS/2 Mouse\n";
        assert_eq!(
            parse_interrupts(t),
            InputInterrupts {
                keyboard: Some(10),
                mouse: Some(20)
            }
        );
        // A virtual machine with no PS/2 devices (this kind of VM).
        let vm = "  CPU0 CPU1\n 26:  0  15  IO-APIC  4-edge  ttyS0\n";
        assert!(!parse_interrupts(vm).any());
    }

    #[test]
    fn interrupt_activity_is_a_change_in_the_counts() {
        let mut t = IdleTracker::new("");
        let c = |k| {
            Some(InputInterrupts {
                keyboard: Some(k),
                mouse: None,
            })
        };
        // First seen: counted as used just now.
        assert_eq!(t.interrupt_idle_time(c(100), 1000), 0);
        assert_eq!(t.interrupt_idle_time(c(100), 1060), 60);
        assert_eq!(t.interrupt_idle_time(c(101), 1070), 0);
        assert_eq!(t.interrupt_idle_time(c(101), 1100), 30);
        // The file could not be read: the last activity stands.
        assert_eq!(t.interrupt_idle_time(None, 1110), 40);
        // Never any input device: idle forever.
        let mut none = IdleTracker::new("");
        assert_eq!(none.interrupt_idle_time(None, 5), INFINITE_IDLE);
    }

    #[test]
    fn console_devices_lose_their_dev_prefix() {
        let t = IdleTracker::new("/dev/mouse, console  kbd");
        assert_eq!(t.console_devices, ["mouse", "console", "kbd"]);
    }
}
