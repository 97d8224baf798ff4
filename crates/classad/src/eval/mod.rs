//! The evaluator: HTCondor's semantics for attribute lookup, scoping,
//! three-valued logic and the match context.
//!
//! An evaluation has up to two top-level ads, MY and TARGET, as in a
//! `MatchClassAd`. An unscoped name is looked up in the ad the expression lives
//! in, then in the ads enclosing it, and finally (HTCondor's default, "old
//! ClassAd semantics") in the other ad of the match. `MY` and `TARGET` are
//! relative to the ad an expression lives in: inside TARGET's own expressions,
//! `MY` is TARGET.
//!
//! Nothing here reads the clock: `time()` and `CurrentTime` come from [`Env`].
//!
//! Every evaluation has a budget ([`EvalLimits`], in [`Env::limits`]): steps
//! (operators, attribute references, function calls, list elements, and what
//! functions and operators read: strings, string-list items, regular
//! expressions' backtracking) and bytes (strings, list elements and ads
//! built, charged before they are built). An evaluation that runs over
//! either is abandoned: every later test fails at once, and its result is
//! ERROR (a failed evaluation, for [`try_eval_expr`]). The budget belongs to
//! the [`Evaluator`]; the functions of this module make one for each
//! evaluation, so each starts with the whole budget. [`eval_expr_metered`] and
//! [`Evaluator::cost`] say what an evaluation spent, and [`EvalLimits::less`]
//! what is left of a budget for a whole request.
//!
//! The counting is cheap because it is split in two: operators and attribute
//! references take one from the steps left without a test, and the steps
//! left are tested only where evaluation enters another expression (an
//! attribute's expression, a function call, a function's argument, a list
//! element) or builds something. Between two tests evaluation walks one
//! expression tree at most once, so it cannot run further over the limit than
//! the size of an expression it was given.

pub mod ops;

use std::borrow::Cow;
use std::cell::OnceCell;
use std::sync::Arc;

use crate::ad::ClassAd;
use crate::expr::{BinOp, Expr};
use crate::name::{AttrName, Special};
use crate::value::{AdValue, ListValue, Value};

/// Finds a user's home directory by login name (supplied by the I/O layer).
pub type UserHomeLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// What the outside world tells an evaluation: the time, the local zone, a
/// random seed, and how to find a user's home directory. Pure code takes these
/// as inputs so that every result is reproducible.
#[derive(Clone)]
pub struct Env {
    /// Seconds since the epoch, for `time()`, `currentTime()` and `CurrentTime`.
    pub now: i64,
    /// The local zone's offset east of UTC in seconds (for `formatTime`, `splitTime`, ...).
    pub utc_offset: i32,
    /// Seed for `random()`.
    pub seed: u64,
    /// Looks up a user's home directory, for `userHome()`, as HTCondor's
    /// `getpwnam` does: the lookup answers `None` for a user it does not know
    /// (or one without a home directory). No lookup at all is HTCondor with
    /// `CLASSAD_ENABLE_USER_HOME = false`: every user is unknown.
    pub user_home: Option<UserHomeLookup>,
    /// How much each evaluation may spend before it gives up with ERROR.
    pub limits: EvalLimits,
}

impl Default for Env {
    fn default() -> Env {
        Env {
            now: 0,
            utc_offset: 0,
            seed: 0x5eed,
            user_home: None,
            limits: EvalLimits::DEFAULT,
        }
    }
}

impl Env {
    /// An environment at time `now` (epoch seconds), in UTC.
    pub fn at(now: i64) -> Env {
        Env {
            now,
            ..Env::default()
        }
    }

    /// This environment with other evaluation limits.
    pub fn with_limits(self, limits: EvalLimits) -> Env {
        Env { limits, ..self }
    }

    /// This environment with a way to find users' home directories, for
    /// `userHome()` (the caller's password database; see
    /// [`Env::user_home`]).
    pub fn with_user_home(self, lookup: UserHomeLookup) -> Env {
        Env {
            user_home: Some(lookup),
            ..self
        }
    }
}

/// How much one evaluation may spend; over either limit, the evaluation
/// stops and its result is ERROR.
///
/// The defaults are far above what real expressions spend, and low enough
/// that a hostile one fails within some tens of milliseconds, having built
/// 32 MiB at most. For scale: HTCondor's example START takes 7 steps and a
/// job's Requirements 15; evaluating every attribute of a machine ad, 87; a
/// policy of 500 clauses like `(TARGET.Owner == "u7" && Memory >= 7)`,
/// 1,500; `size(Big)` of a 1 MB string 16,000, `regexp("h$", Big)` 280,000.
/// A step is some nanoseconds to some tens: a chain of references that
/// doubles at each level spends the default budget in about 12 ms on a small
/// machine, and the costliest hostile expressions tried (splitting and
/// joining strings that double) in about 50 ms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EvalLimits {
    /// Steps: each operator, attribute reference, function call and list
    /// element evaluated is one, and a string handed to a function is one
    /// more per [`SCAN_BYTES_PER_STEP`] bytes.
    pub max_steps: u64,
    /// Bytes of strings, list elements and ads built, counted as they are
    /// built (what is freed again is not given back).
    pub max_bytes: u64,
}

impl EvalLimits {
    /// A million steps and 32 MiB: see the type's description.
    pub const DEFAULT: EvalLimits = EvalLimits {
        max_steps: 1_000_000,
        max_bytes: 32 << 20,
    };

    /// No limit, for expressions the caller trusts (its own configuration).
    pub const UNLIMITED: EvalLimits = EvalLimits {
        max_steps: u64::MAX,
        max_bytes: u64::MAX,
    };

    /// What is left of these limits after spending `cost`: a caller that
    /// bounds a whole request (a query over many ads) evaluates each ad with
    /// what the ones before it left.
    pub fn less(self, cost: EvalCost) -> EvalLimits {
        EvalLimits {
            max_steps: self.max_steps.saturating_sub(cost.steps),
            max_bytes: self.max_bytes.saturating_sub(cost.bytes),
        }
    }

    /// The smaller of each limit.
    pub fn min(self, other: EvalLimits) -> EvalLimits {
        EvalLimits {
            max_steps: self.max_steps.min(other.max_steps),
            max_bytes: self.max_bytes.min(other.max_bytes),
        }
    }
}

impl Default for EvalLimits {
    fn default() -> EvalLimits {
        EvalLimits::DEFAULT
    }
}

/// What one evaluation spent, in the units of [`EvalLimits`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EvalCost {
    /// Steps; over the limit when `exhausted`.
    pub steps: u64,
    /// Bytes built, with the charge that was refused when `exhausted`.
    pub bytes: u64,
    /// The evaluation ran over a limit (and its result is ERROR).
    pub exhausted: bool,
}

/// The steps of `limits` as an evaluator counts them down.
fn whole_budget(limits: &EvalLimits) -> i64 {
    i64::try_from(limits.max_steps).unwrap_or(i64::MAX)
}

/// A string handed to a built-in function costs one step per this many bytes
/// (the function may read all of it).
pub const SCAN_BYTES_PER_STEP: usize = 64;

/// What a list element costs in bytes beyond its own text: the element
/// expression and a string's header.
pub const ITEM_BYTES: u64 = (std::mem::size_of::<Expr>() + 16) as u64;

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env")
            .field("now", &self.now)
            .field("utc_offset", &self.utc_offset)
            .field("seed", &self.seed)
            .field("limits", &self.limits)
            .finish()
    }
}

/// Which ad of the match an expression lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    My,
    Target,
}

impl Side {
    pub(crate) fn other(self) -> Side {
        match self {
            Side::My => Side::Target,
            Side::Target => Side::My,
        }
    }
}

/// Where an expression is being evaluated: no ad, directly in MY or TARGET, or
/// inside a nested ad (which knows its enclosing scope).
#[derive(Clone, Debug, Default)]
pub enum Scope {
    #[default]
    None,
    Top(Side),
    Nested(Arc<ScopeNode>),
}

#[derive(Debug)]
pub struct ScopeNode {
    pub ad: Arc<ClassAd>,
    pub parent: Scope,
}

impl Scope {
    /// The top-level ad this scope hangs from, if any.
    fn root_side(&self) -> Option<Side> {
        let mut s = self;
        loop {
            match s {
                Scope::None => return None,
                Scope::Top(side) => return Some(*side),
                Scope::Nested(n) => s = &n.parent,
            }
        }
    }

    pub fn nested(ad: Arc<ClassAd>, parent: Scope) -> Scope {
        Scope::Nested(Arc::new(ScopeNode { ad, parent }))
    }
}

/// Levels a borrowed operand costs: a reference one, `MY.x` two (the select
/// and the `MY` below it), a literal none.
#[inline(always)]
fn borrowed_cost(e: &Expr) -> u32 {
    match e {
        Expr::Lit(_) => 0,
        Expr::Folded(f) => f.cost,
        Expr::Select(..) => 2,
        _ => 1,
    }
}

/// True when this thread's stack has little room left.
#[inline]
fn stack_is_low() -> bool {
    stacker::remaining_stack().is_some_and(|r| r < 128 * 1024)
}

/// Evaluation could not finish: it recursed deeper than HTCondor allows, or
/// ran over its budget ([`EvalLimits`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EvalFailed;

impl std::fmt::Display for EvalFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("evaluation recursed too deeply or ran over its budget")
    }
}
impl std::error::Error for EvalFailed {}

/// How deeply evaluation may nest, in HTCondor's units: each operator node
/// (including parentheses, subscripts and conditionals) and each attribute
/// reference being evaluated costs one; literals, lists, ads and function
/// calls cost nothing. Measured against HTCondor 25: a chain `a0 = a1; a1 = a2;
/// ...` evaluates through 400 references and fails at 401.
pub const MAX_EVAL_DEPTH: u32 = 400;

const INLINE_VISITING: usize = 16;

/// One evaluation in progress. Built-in functions receive it to evaluate their
/// arguments.
///
/// An evaluator has one budget, the environment's limits, for all it
/// evaluates: one kept for many evaluations over the same ads spends it
/// across them, unless [`Evaluator::reset_budget`] gives it back. Once it is
/// spent, [`Evaluator::failed`] is true and values are to be read as ERROR.
pub struct Evaluator<'a> {
    my: Option<&'a ClassAd>,
    target: Option<&'a ClassAd>,
    pub env: &'a Env,
    /// Attribute expressions being evaluated right now, to turn a cycle into
    /// UNDEFINED instead of a hang.
    visiting: [*const Expr; INLINE_VISITING],
    visiting_len: usize,
    visiting_spill: Vec<*const Expr>,
    failed: bool,
    depth: u32,
    rng: u64,
    /// Steps left of the budget. It only counts down (a step is one
    /// subtraction), and below zero the budget is spent for good, so that
    /// every later test fails.
    left: i64,
    /// Bytes built so far.
    bytes: u64,
    /// MY and TARGET as ad values, copied once when an expression first asks
    /// for a whole top-level ad.
    top_ads: [OnceCell<Arc<ClassAd>>; 2],
}

impl<'a> Evaluator<'a> {
    pub fn new(
        my: Option<&'a ClassAd>,
        target: Option<&'a ClassAd>,
        env: &'a Env,
    ) -> Evaluator<'a> {
        Evaluator {
            my,
            target,
            env,
            visiting: [std::ptr::null(); INLINE_VISITING],
            visiting_len: 0,
            visiting_spill: Vec::new(),
            failed: false,
            depth: 0,
            rng: env.seed ^ 0x9e37_79b9_7f4a_7c15,
            left: whole_budget(&env.limits),
            bytes: 0,
            top_ads: [OnceCell::new(), OnceCell::new()],
        }
    }

    /// What the evaluator has spent (since it was made, or its budget reset).
    pub fn cost(&self) -> EvalCost {
        let spent = i128::from(whole_budget(&self.env.limits)) - i128::from(self.left);
        EvalCost {
            steps: u64::try_from(spent).unwrap_or(u64::MAX),
            bytes: self.bytes,
            exhausted: self.exhausted(),
        }
    }

    /// True once the budget is spent.
    pub fn exhausted(&self) -> bool {
        self.left < 0
    }

    /// Charges `n` steps of work; false (and the evaluation is abandoned:
    /// its result will be ERROR) when that is over the limit. A built-in
    /// returns ERROR at once when told false.
    #[inline]
    pub fn charge_steps(&mut self, n: u64) -> bool {
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        self.left = self.left.saturating_sub(n);
        if self.left < 0 {
            self.exhaust();
            return false;
        }
        true
    }

    /// Charges `n` bytes about to be built; false (and the evaluation is
    /// abandoned) when that is over the limit. Call it before building.
    #[inline]
    pub fn charge_bytes(&mut self, n: u64) -> bool {
        self.bytes = self.bytes.saturating_add(n);
        if self.bytes > self.env.limits.max_bytes || self.left < 0 {
            self.exhaust();
            return false;
        }
        true
    }

    /// Charges a list of `items` elements holding `text` bytes of strings.
    pub fn charge_items(&mut self, items: usize, text: usize) -> bool {
        self.charge_bytes(
            (items as u64)
                .saturating_mul(ITEM_BYTES)
                .saturating_add(text as u64),
        )
    }

    /// Bytes that may still be built in this evaluation.
    pub fn bytes_left(&self) -> u64 {
        if self.exhausted() {
            return 0;
        }
        self.env.limits.max_bytes.saturating_sub(self.bytes)
    }

    /// Marks the evaluation as over its budget; its result will be ERROR.
    #[cold]
    #[inline(never)]
    fn exhaust(&mut self) -> Value {
        self.left = self.left.min(-1);
        Value::Error
    }

    /// Gives the evaluator the whole budget of the environment's limits
    /// again, for another evaluation (and forgets that the budget was spent).
    pub fn reset_budget(&mut self) {
        self.left = whole_budget(&self.env.limits);
        self.bytes = 0;
    }

    /// The scope of an expression that lives directly in MY (or no ad at all).
    pub fn my_scope(&self) -> Scope {
        if self.my.is_some() {
            Scope::Top(Side::My)
        } else {
            Scope::None
        }
    }

    /// True once the evaluation has hit the recursion limit or spent its
    /// budget: its value is then to be read as ERROR.
    pub fn failed(&self) -> bool {
        self.failed || self.left < 0
    }

    fn side_ad(&self, side: Side) -> Option<&'a ClassAd> {
        match side {
            Side::My => self.my,
            Side::Target => self.target,
        }
    }

    /// The next number from this evaluation's random sequence (splitmix64).
    pub fn next_random(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    #[inline]
    fn enter(&mut self, e: *const Expr) -> Result<(), Value> {
        let inline = &self.visiting[..self.visiting_len];
        if inline.contains(&e) || self.visiting_spill.contains(&e) {
            return Err(Value::Undefined);
        }
        if self.visiting_len < INLINE_VISITING {
            self.visiting[self.visiting_len] = e;
            self.visiting_len += 1;
        } else {
            self.visiting_spill.push(e);
        }
        Ok(())
    }

    fn leave(&mut self) {
        if self.visiting_spill.pop().is_none() {
            self.visiting_len -= 1;
        }
    }

    /// Evaluates the expression bound to an attribute, guarding against cycles.
    #[inline]
    fn eval_bound(&mut self, e: &Expr, scope: &Scope) -> Value {
        // Most attributes of a machine or job ad are literals, which cannot
        // take part in a cycle.
        if let Expr::Lit(v) = e {
            return v.clone();
        }
        // Entering another expression: the place to test the budget.
        self.left -= 1;
        if self.left < 0 {
            return self.exhaust();
        }
        if let Err(v) = self.enter(e) {
            return v;
        }
        let v = self.eval(e, scope);
        self.leave();
        v
    }

    /// Evaluates a function's argument, or a list element, as part of the
    /// evaluation in progress: a step, tested, and the size of a string
    /// result, which the caller may read whole (see [`SCAN_BYTES_PER_STEP`]).
    pub(crate) fn eval_arg(&mut self, e: &Expr, scope: &Scope) -> Value {
        self.left -= 1;
        if self.left < 0 {
            return self.exhaust();
        }
        let v = self.eval(e, scope);
        if let Value::Str(s) = &v {
            if !self.charge_steps((s.len() / SCAN_BYTES_PER_STEP) as u64) {
                return Value::Error;
            }
        }
        v
    }

    /// Evaluates `e` in `scope`, within what is left of the evaluator's
    /// budget. Once that is spent, [`Evaluator::failed`] is true and the
    /// value must be read as ERROR (the functions of this module do).
    pub fn eval(&mut self, e: &Expr, scope: &Scope) -> Value {
        // Checking the stack costs a little, so only every few levels; deep
        // enough, evaluation continues on a fresh stack segment.
        if self.depth.is_multiple_of(16) && self.depth > 0 && stack_is_low() {
            return self.eval_on_new_stack(e, scope);
        }
        // Operators and attribute references cost one level each against
        // HTCondor's depth limit; literals, calls, lists and ads cost nothing.
        macro_rules! counted {
            ($body:expr) => {{
                if self.depth >= MAX_EVAL_DEPTH {
                    return self.fail();
                }
                self.depth += 1;
                // Counted, not tested: see the module's description.
                self.left -= 1;
                let v = $body;
                self.depth -= 1;
                v
            }};
        }
        // Hot kinds first, tested one by one: conditional branches predict
        // better than one jump table shared by every node of every tree.
        if let Expr::Binary(op, operands) = e {
            let (l, r) = &**operands;
            return counted!(match op {
                BinOp::And => self.eval_logic(l, r, scope, false),
                BinOp::Or => self.eval_logic(l, r, scope, true),
                _ => {
                    let a = self.operand(l, scope);
                    let b = self.operand(r, scope);
                    ops::binary_counted(*op, &a, &b, &mut self.left)
                }
            });
        }
        if let Expr::Paren(x) = e {
            return self.eval_parens(x, scope);
        }
        if let Expr::Attr(name) = e {
            return counted!(self.eval_attr_ref(name, scope));
        }
        match e {
            Expr::Lit(v) => v.clone(),
            Expr::Folded(f) => {
                if self.depth + f.cost > MAX_EVAL_DEPTH {
                    return self.fail();
                }
                f.value.clone()
            }
            Expr::Unary(op, x) => counted!({
                let v = self.eval(x, scope);
                ops::unary(*op, &v)
            }),
            Expr::Select(base, name) => counted!(self.eval_select(base, name, scope)),
            Expr::Absolute(_) | Expr::Index(..) | Expr::Cond(..) | Expr::Elvis(..) => {
                counted!(self.eval_rare(e, scope))
            }
            _ => self.eval_uncounted(e, scope),
        }
    }

    /// Abandons the whole evaluation (HTCondor's evaluation returning
    /// false): its result is ERROR, and a failure for [`try_eval_expr`].
    #[cold]
    pub(crate) fn fail(&mut self) -> Value {
        self.failed = true;
        Value::Error
    }

    #[cold]
    #[inline(never)]
    fn eval_on_new_stack(&mut self, e: &Expr, scope: &Scope) -> Value {
        stacker::grow(2 * 1024 * 1024, || self.eval(e, scope))
    }

    /// Nested parentheses each cost one level, as in HTCondor, but need no
    /// call of their own.
    #[inline]
    fn eval_parens(&mut self, mut x: &Expr, scope: &Scope) -> Value {
        let mut extra = 0;
        while let Expr::Paren(inner) = x {
            extra += 1;
            x = inner;
        }
        if self.depth + extra >= MAX_EVAL_DEPTH {
            return self.fail();
        }
        self.depth += extra;
        let v = self.eval(x, scope);
        self.depth -= extra;
        v
    }

    /// Absolute references, subscripts and the conditionals (counted by the caller).
    #[inline(never)]
    fn eval_rare(&mut self, e: &Expr, scope: &Scope) -> Value {
        match e {
            Expr::Absolute(name) => self.eval_absolute(name, scope),
            Expr::Index(base, idx) => {
                let b = self.eval(base, scope);
                let i = self.eval(idx, scope);
                self.index(b, i)
            }
            Expr::Cond(parts) => match self.eval(&parts.0, scope) {
                Value::Error => Value::Error,
                Value::Undefined => Value::Undefined,
                v => match v.as_bool() {
                    Some(true) => self.eval(&parts.1, scope),
                    Some(false) => self.eval(&parts.2, scope),
                    None => Value::Error,
                },
            },
            Expr::Elvis(a, b) => match self.eval(a, scope) {
                Value::Undefined => self.eval(b, scope),
                v => v,
            },
            other => self.eval_uncounted(other, scope),
        }
    }

    #[inline(never)]
    fn eval_uncounted(&mut self, e: &Expr, scope: &Scope) -> Value {
        match e {
            Expr::Lit(v) => v.clone(),
            Expr::RelTimeLit(secs) => Value::Real(*secs),
            Expr::Call(call) => {
                self.left -= 1;
                if self.left < 0 {
                    return self.exhaust();
                }
                match call.builtin {
                    Some(f) => f(self, &call.args, scope),
                    None => Value::Error,
                }
            }
            Expr::List(items) => Value::List(ListValue::new(items.clone(), scope.clone())),
            Expr::Ad(ad) => Value::Ad(AdValue::new(ad.clone(), scope.clone())),
            other => self.eval(other, scope),
        }
    }

    /// An operand's value, borrowed where it can be: a literal, or an
    /// attribute of MY or TARGET bound to a literal (most attributes of a
    /// machine or job ad). Anything else is evaluated. This is the hot path of
    /// policy expressions: no call, no copy, no reference count.
    #[inline(always)]
    fn operand<'x>(&mut self, mut e: &'x Expr, scope: &Scope) -> Cow<'x, Value>
    where
        'a: 'x,
    {
        // Parentheses cost a level each, as in HTCondor, but need no call.
        let mut parens = 0;
        while let Expr::Paren(inner) = e {
            parens += 1;
            e = inner;
        }
        if let Some(v) = self.borrowed(e, scope) {
            return if self.depth + parens + borrowed_cost(e) > MAX_EVAL_DEPTH {
                Cow::Owned(self.fail())
            } else {
                Cow::Borrowed(v)
            };
        }
        if self.depth + parens > MAX_EVAL_DEPTH {
            return Cow::Owned(self.fail());
        }
        self.depth += parens;
        let v = self.eval(e, scope);
        self.depth -= parens;
        Cow::Owned(v)
    }

    /// The value of `e` by reference, when it is a literal or an attribute of
    /// MY or TARGET bound to a literal.
    #[inline(always)]
    fn borrowed<'x>(&self, e: &'x Expr, scope: &Scope) -> Option<&'x Value>
    where
        'a: 'x,
    {
        let found = match e {
            Expr::Lit(v) => return Some(v),
            Expr::Folded(f) => return Some(&f.value),
            Expr::Attr(name) if name.special() == Special::None => match scope {
                Scope::Top(side) => self.side_ad(*side)?.lookup_name(name)?,
                _ => return None,
            },
            Expr::Select(base, name) => {
                let Expr::Attr(b) = &**base else { return None };
                let root = scope.root_side()?;
                let side = match b.special() {
                    Special::My => root,
                    Special::Target => root.other(),
                    _ => return None,
                };
                self.side_ad(side)?.lookup_name(name)?
            }
            _ => return None,
        };
        match found {
            Expr::Lit(v) => Some(v),
            _ => None,
        }
    }

    /// `&&` (`decides` = false) and `||` (`decides` = true): non-strict, and
    /// short-circuit as HTCondor's are. A left side equal to `decides`
    /// settles it; UNDEFINED on the left is settled only by the right side;
    /// ERROR, or a value that is not a boolean or a number, is ERROR.
    fn eval_logic(&mut self, l: &Expr, r: &Expr, scope: &Scope, decides: bool) -> Value {
        let lv = self.operand(l, scope);
        match &*lv {
            Value::Error => Value::Error,
            Value::Undefined => match &*self.operand(r, scope) {
                Value::Error => Value::Error,
                Value::Undefined => Value::Undefined,
                rv => match rv.as_bool() {
                    Some(b) if b == decides => Value::Bool(decides),
                    Some(_) => Value::Undefined,
                    None => Value::Error,
                },
            },
            lv => match lv.as_bool() {
                None => Value::Error,
                Some(b) if b == decides => Value::Bool(decides),
                Some(_) => match &*self.operand(r, scope) {
                    Value::Error => Value::Error,
                    Value::Undefined => Value::Undefined,
                    rv => rv.as_bool().map_or(Value::Error, Value::Bool),
                },
            },
        }
    }

    /// `MY`, `TARGET` (also `other`) and `parent` as values, seen from `scope`.
    /// In HTCondor these are attributes of the match context that holds the two
    /// ads; they are resolved first here, so an ad attribute with one of these
    /// names cannot shadow them.
    fn special(&self, name: &AttrName, scope: &Scope) -> Option<Value> {
        match name.special() {
            Special::None | Special::CurrentTime => None,
            Special::My => Some(self.top_ad_value(scope.root_side()?)),
            Special::Target => Some(self.top_ad_value(scope.root_side()?.other())),
            Special::Parent => match scope {
                Scope::None => None,
                Scope::Nested(node) => Some(match &node.parent {
                    Scope::None => Value::Undefined,
                    Scope::Top(side) => self.top_ad_value(*side),
                    Scope::Nested(p) => Value::Ad(AdValue::new(p.ad.clone(), p.parent.clone())),
                }),
                // The top-level ads of a match are held by a context ad of
                // their own (HTCondor's MatchClassAd), which has nothing else.
                Scope::Top(_) => Some(Value::ad(ClassAd::new())),
            },
        }
    }

    fn top_ad_value(&self, side: Side) -> Value {
        match self.side_ad(side) {
            // The top-level ads are borrowed; a copy is made only when an
            // expression asks for the whole ad as a value (rare), and only
            // once, however often it asks.
            Some(ad) => {
                let copy = self.top_ads[side as usize].get_or_init(|| Arc::new(ad.clone()));
                Value::Ad(AdValue::new(copy.clone(), Scope::None))
            }
            None => Value::Undefined,
        }
    }

    /// Looks `name` up in a top-level ad; `CurrentTime` missing there is the clock.
    #[inline(always)]
    fn lookup_top(&mut self, side: Side, name: &AttrName) -> Option<Value> {
        let ad = self.side_ad(side)?;
        if let Some(e) = ad.lookup_name(name) {
            return Some(self.eval_bound(e, &Scope::Top(side)));
        }
        if name.special() == Special::CurrentTime {
            return Some(Value::Int(self.env.now));
        }
        None
    }

    fn eval_attr_ref(&mut self, name: &AttrName, scope: &Scope) -> Value {
        if let Some(v) = self.special(name, scope) {
            return v;
        }
        let mut s = scope;
        loop {
            match s {
                Scope::None => return Value::Undefined,
                Scope::Nested(node) => {
                    if let Some(e) = node.ad.lookup_name(name) {
                        let here = s.clone();
                        return self.eval_bound(e, &here);
                    }
                    s = &node.parent;
                }
                Scope::Top(side) => {
                    if let Some(v) = self.lookup_top(*side, name) {
                        return v;
                    }
                    // Old ClassAd semantics: fall back to the other ad.
                    let other = side.other();
                    if let Some(ad) = self.side_ad(other) {
                        if let Some(e) = ad.lookup_name(name) {
                            return self.eval_bound(e, &Scope::Top(other));
                        }
                    }
                    return Value::Undefined;
                }
            }
        }
    }

    fn eval_absolute(&mut self, name: &AttrName, scope: &Scope) -> Value {
        // `.name` starts from the outermost ad of the scope.
        match scope.root_side() {
            Some(side) => self.lookup_top(side, name).unwrap_or(Value::Undefined),
            None => {
                self.failed = true;
                Value::Error
            }
        }
    }

    fn eval_select(&mut self, base: &Expr, name: &AttrName, scope: &Scope) -> Value {
        // Fast path for MY.x and TARGET.x: no copy of the ad.
        if let Expr::Attr(b) = base {
            let side = match b.special() {
                Special::My => scope.root_side(),
                Special::Target => scope.root_side().map(Side::other),
                _ => None,
            };
            if let Some(side) = side {
                // HTCondor evaluates the `MY`/`TARGET` reference itself one level down.
                if self.depth >= MAX_EVAL_DEPTH {
                    self.failed = true;
                    return Value::Error;
                }
                return self.lookup_top(side, name).unwrap_or(Value::Undefined);
            }
            if matches!(b.special(), Special::My | Special::Target) && matches!(scope, Scope::None)
            {
                return Value::Undefined;
            }
        }
        let b = self.eval(base, scope);
        self.select(b, name)
    }

    /// `value.name`: an attribute of a nested ad, or of every ad in a list.
    pub fn select(&mut self, base: Value, name: &AttrName) -> Value {
        match base {
            Value::Ad(adv) => self.lookup_in_ad(&adv, name),
            Value::List(l) => {
                if !self.charge_items(l.items.len(), 0) {
                    return Value::Error;
                }
                let mut out = Vec::with_capacity(l.items.len());
                for item in l.items.iter() {
                    let v = self.eval_arg(item, &l.scope);
                    out.push(match v {
                        Value::Ad(adv) => self.lookup_in_ad(&adv, name),
                        Value::Undefined => Value::Undefined,
                        _ => Value::Error,
                    });
                }
                Value::list_of(out)
            }
            Value::Undefined => Value::Undefined,
            _ => Value::Error,
        }
    }

    /// The value of attribute `name` of a nested ad.
    pub fn lookup_in_ad(&mut self, adv: &AdValue, name: &AttrName) -> Value {
        match adv.ad.lookup_name(name) {
            Some(e) => {
                let scope = Scope::nested(adv.ad.clone(), adv.parent.clone());
                self.eval_bound(e, &scope)
            }
            None => Value::Undefined,
        }
    }

    /// Evaluates `e` inside a nested ad (the ad is its scope).
    pub fn eval_in_ad(&mut self, e: &Expr, adv: &AdValue) -> Value {
        let scope = Scope::nested(adv.ad.clone(), adv.parent.clone());
        self.eval_arg(e, &scope)
    }

    /// The expression bound to an unscoped name, and the scope it lives in.
    pub fn find_attr<'s>(&self, name: &AttrName, scope: &'s Scope) -> Option<(&'s Expr, Scope)>
    where
        'a: 's,
    {
        let mut s = scope;
        loop {
            match s {
                Scope::None => return None,
                Scope::Nested(node) => {
                    if let Some(e) = node.ad.lookup_name(name) {
                        return Some((e, s.clone()));
                    }
                    s = &node.parent;
                }
                Scope::Top(side) => {
                    for side in [*side, side.other()] {
                        if let Some(e) = self.side_ad(side).and_then(|ad| ad.lookup_name(name)) {
                            return Some((e, Scope::Top(side)));
                        }
                    }
                    return None;
                }
            }
        }
    }

    /// `base[index]`: a list element by position, or a nested ad's attribute by name.
    pub fn index(&mut self, base: Value, idx: Value) -> Value {
        match (&base, &idx) {
            (Value::Error, _) | (_, Value::Error) => Value::Error,
            (Value::List(l), Value::Int(i)) => {
                if *i < 0 || *i as usize >= l.items.len() {
                    return Value::Error;
                }
                self.eval_arg(&l.items[*i as usize], &l.scope)
            }
            (Value::Ad(adv), Value::Str(s)) => self.lookup_in_ad(adv, &AttrName::new(s)),
            (Value::Undefined, _) | (_, Value::Undefined) => Value::Undefined,
            _ => Value::Error,
        }
    }

    /// Evaluates every element of a list value.
    pub fn list_values(&mut self, l: &ListValue) -> Vec<Value> {
        l.items.iter().map(|e| self.eval_arg(e, &l.scope)).collect()
    }
}

fn finish(ev: &Evaluator<'_>, v: Value) -> Result<Value, EvalFailed> {
    if ev.failed() {
        Err(EvalFailed)
    } else {
        Ok(v)
    }
}

/// Evaluates `expr` as an expression of MY, with TARGET as the other ad of the
/// match. Either ad may be absent.
pub fn try_eval_expr(
    expr: &Expr,
    my: Option<&ClassAd>,
    target: Option<&ClassAd>,
    env: &Env,
) -> Result<Value, EvalFailed> {
    let mut ev = Evaluator::new(my, target, env);
    let scope = ev.my_scope();
    let v = ev.eval(expr, &scope);
    finish(&ev, v)
}

/// As [`eval_expr`], also saying what the evaluation spent (for a caller that
/// charges a whole request: see [`EvalLimits::less`]).
pub fn eval_expr_metered(
    expr: &Expr,
    my: Option<&ClassAd>,
    target: Option<&ClassAd>,
    env: &Env,
) -> (Value, EvalCost) {
    let mut ev = Evaluator::new(my, target, env);
    let scope = ev.my_scope();
    let v = ev.eval(expr, &scope);
    let cost = ev.cost();
    (finish(&ev, v).unwrap_or(Value::Error), cost)
}

/// As [`try_eval_expr`], with a failed evaluation read as ERROR.
pub fn eval_expr(expr: &Expr, my: Option<&ClassAd>, target: Option<&ClassAd>, env: &Env) -> Value {
    try_eval_expr(expr, my, target, env).unwrap_or(Value::Error)
}

/// Evaluates attribute `name` of `my` (UNDEFINED if it has none).
pub fn eval_attr(my: &ClassAd, target: Option<&ClassAd>, name: &str, env: &Env) -> Value {
    match my.get(name) {
        Some(e) => {
            let mut ev = Evaluator::new(Some(my), target, env);
            let v = ev.eval_bound(e, &Scope::Top(Side::My));
            finish(&ev, v).unwrap_or(Value::Error)
        }
        None => Value::Undefined,
    }
}
