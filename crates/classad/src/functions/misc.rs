//! Everything else: `ifThenElse`, `eval`, `unparse`, `debug`, HTCondor's
//! environment and argument string conversions, `userHome` and `userMap`.

use std::collections::BTreeMap;

use super::to_str;
use crate::eval::{Evaluator, Scope};
use crate::expr::Expr;
use crate::value::Value;

/// `ifThenElse(c, a, b)`: evaluates only the branch it returns. A condition
/// that is not a boolean or number is ERROR; UNDEFINED stays UNDEFINED.
pub fn if_then_else(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    if args.len() != 3 {
        return Value::Error;
    }
    let c = match ev.eval_arg(&args[0], scope) {
        Value::Undefined => return Value::Undefined,
        Value::Bool(b) => b,
        Value::Int(i) => i != 0,
        Value::Real(r) => r != 0.0,
        _ => return Value::Error,
    };
    ev.eval_arg(&args[if c { 1 } else { 2 }], scope)
}

/// `eval(s)`: parses the string (or the printed form of another value) as an
/// expression and evaluates it where the call is. UNDEFINED is ERROR.
pub fn eval(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    if args.len() != 1 {
        return Value::Error;
    }
    let Ok(text) = to_str(&ev.eval_arg(&args[0], scope)) else {
        return Value::Error;
    };
    // Parsing costs more than reading, and the tree is bigger than the text.
    if !ev.charge_steps((text.len() / 16) as u64) || !ev.charge_bytes(4 * text.len() as u64) {
        return Value::Error;
    }
    match crate::parser::parse_expr(&text) {
        Ok(e) => ev.eval_arg(&e, scope),
        Err(_) => Value::Error,
    }
}

/// `unparse(attr)`: the text of the expression bound to `attr` in the ad the
/// call is in, without evaluating it ("" when there is none). Any argument
/// other than an attribute reference is ERROR.
pub fn unparse(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    let [Expr::Attr(name)] = args else {
        return Value::Error;
    };
    // HTCondor looks only in the current ad, not in enclosing ones.
    let found = ev.find_attr(name, scope).filter(|(_, s)| same_ad(s, scope));
    let text = found
        .map(|(e, _)| crate::unparse::expr_to_string(e))
        .unwrap_or_default();
    // The text is as long as the expression given; charged once made.
    built(ev, text)
}

/// A string made by a function whose result is at most a few times as long
/// as what it read: charged once made (what it read was charged already).
fn built(ev: &mut Evaluator<'_>, text: String) -> Value {
    if !ev.charge_bytes(text.len() as u64) {
        return Value::Error;
    }
    Value::from(text)
}

fn same_ad(a: &Scope, b: &Scope) -> bool {
    match (a, b) {
        (Scope::Top(x), Scope::Top(y)) => x == y,
        (Scope::Nested(x), Scope::Nested(y)) => std::sync::Arc::ptr_eq(&x.ad, &y.ad),
        _ => false,
    }
}

/// `debug(x)`: the value of `x` (HTCondor also logs it).
pub fn debug(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    if args.len() != 1 {
        return Value::Error;
    }
    ev.eval_arg(&args[0], scope)
}

/// An environment: names to values, printed in name order.
type Environment = BTreeMap<String, String>;

/// Adds a `name=value` entry; an entry without `=` or with no name is invalid.
fn add_entry(env: &mut Environment, entry: &str) -> Option<()> {
    let (name, value) = entry.split_once('=')?;
    if name.is_empty() {
        return None;
    }
    env.insert(name.to_string(), value.to_string());
    Some(())
}

/// The V1 environment syntax: `name=value` entries separated by `;`.
fn merge_v1(env: &mut Environment, s: &str) -> Option<()> {
    for entry in s.split(';').filter(|e| !e.is_empty()) {
        add_entry(env, entry)?;
    }
    Some(())
}

/// Splits V2 syntax (as for arguments): white-space separated words, where
/// single quotes quote and `''` inside quotes is a literal quote.
fn split_v2(s: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' if chars.peek() == Some(&'\'') => {
                            chars.next();
                            cur.push('\'');
                        }
                        '\'' => break,
                        other => cur.push(other),
                    }
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Some(words)
}

/// One word in V2 syntax, quoted when it has white space or quotes.
fn quote_v2(w: &str) -> String {
    if !w.is_empty()
        && !w
            .chars()
            .any(|c| c.is_whitespace() || c == '\'' || c == '"')
    {
        return w.to_string();
    }
    format!("'{}'", w.replace('\'', "''"))
}

fn print_v2(env: &Environment) -> String {
    env.iter()
        .map(|(k, v)| quote_v2(&format!("{k}={v}")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `envV1ToV2(env)`: a V1 environment string in V2 syntax.
pub fn env_v1_to_v2(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    if args.len() != 1 {
        return Value::Error;
    }
    match ev.eval_arg(&args[0], scope) {
        Value::Undefined => Value::Undefined,
        // Each entry is some work (a copy, a map insertion): charged by
        // the length that holds them.
        Value::Str(s) if !ev.charge_steps(s.len() as u64 / 8) => Value::Error,
        Value::Str(s) => {
            let mut env = Environment::new();
            merge_v1(&mut env, &s).map_or(Value::Error, |_| built(ev, print_v2(&env)))
        }
        _ => Value::Error,
    }
}

/// `mergeEnvironment(env, ...)`: V2 environments merged left to right, later
/// values winning. UNDEFINED arguments are skipped.
pub fn merge_environment(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    let mut env = Environment::new();
    for a in args {
        match ev.eval_arg(a, scope) {
            Value::Undefined => {}
            Value::Str(s) => {
                if !ev.charge_steps(s.len() as u64 / 8) {
                    return Value::Error;
                }
                let Some(words) = split_v2(&s) else {
                    return Value::Error;
                };
                for w in words {
                    if add_entry(&mut env, &w).is_none() {
                        return Value::Error;
                    }
                }
            }
            _ => return Value::Error,
        }
    }
    built(ev, print_v2(&env))
}

/// The optional syntax version argument of argsToList/listToArgs (1 or 2).
fn args_version(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Option<u8> {
    match args.get(1).map(|a| ev.eval_arg(a, scope)) {
        None => Some(2),
        Some(Value::Int(1)) => Some(1),
        Some(Value::Int(2)) => Some(2),
        Some(_) => None,
    }
}

/// `argsToList(args [, version])`: an argument string as a list of strings.
/// V1 separates by white space; V2 also understands single quotes.
pub fn args_to_list(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    if !(1..=2).contains(&args.len()) {
        return Value::Error;
    }
    let Some(version) = args_version(ev, args, scope) else {
        return Value::Error;
    };
    let Value::Str(s) = ev.eval_arg(&args[0], scope) else {
        return Value::Error;
    };
    let words = if version == 1 {
        Some(s.split_whitespace().map(str::to_string).collect())
    } else {
        split_v2(&s)
    };
    let Some(words) = words else {
        return Value::Error;
    };
    if !ev.charge_items(words.len(), s.len()) {
        return Value::Error;
    }
    Value::built_list_of(words.into_iter().map(Value::from).collect())
}

/// `listToArgs(list [, version])`: a list of strings as an argument string.
/// V1 cannot hold an argument with white space in it.
pub fn list_to_args(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    if !(1..=2).contains(&args.len()) {
        return Value::Error;
    }
    let Some(version) = args_version(ev, args, scope) else {
        return Value::Error;
    };
    let Value::List(l) = ev.eval_arg(&args[0], scope) else {
        return Value::Error;
    };
    let mut words = Vec::new();
    for v in ev.list_values(&l) {
        let Value::Str(w) = v else {
            return Value::Error;
        };
        if version == 1 && w.chars().any(char::is_whitespace) {
            return Value::Error;
        }
        words.push(if version == 1 {
            w.to_string()
        } else {
            quote_v2(&w)
        });
    }
    built(ev, words.join(" "))
}

/// `userHome(user [, default])`: the user's home directory, found through the
/// environment's lookup (HTCondor's `userHome_func`). The default counts
/// only if it is a non-empty string. A user the lookup does not know (or no
/// lookup, as when HTCondor has `CLASSAD_ENABLE_USER_HOME` off) gives the
/// default, else UNDEFINED; an UNDEFINED user likewise; a user that is not a
/// string (ERROR, a number, a list) gives the default, else ERROR. A home
/// that is found wins over the default. Called with no argument or more
/// than two, HTCondor abandons the whole evaluation, and so do we.
pub fn user_home(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    if !(1..=2).contains(&args.len()) {
        return ev.fail();
    }
    let default = match args.get(1).map(|a| ev.eval_arg(a, scope)) {
        Some(Value::Str(s)) if !s.is_empty() => Some(s),
        _ => None,
    };
    let or_default = |otherwise: Value| default.clone().map_or(otherwise, Value::Str);
    let user = match ev.eval_arg(&args[0], scope) {
        Value::Undefined => return or_default(Value::Undefined),
        Value::Str(s) => s,
        _ => return or_default(Value::Error),
    };
    match ev.env.user_home.as_ref().and_then(|f| f(&user)) {
        Some(home) => Value::from(home),
        None => or_default(Value::Undefined),
    }
}

/// `userMap(map, user [, preferred [, default]])`. ferrocondor evaluates
/// ClassAds without HTCondor's map files, so no user has a mapping: the
/// result is UNDEFINED, or the fourth argument when given. As in HTCondor,
/// a name or user that is not a string gives ERROR if either is ERROR.
pub fn user_map(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    if !(2..=4).contains(&args.len()) {
        return Value::Error;
    }
    let vals = super::eval_all(ev, args, scope);
    let default = vals.get(3).cloned().unwrap_or(Value::Undefined);
    match (&vals[0], &vals[1]) {
        (Value::Str(_), Value::Str(_)) => default,
        (Value::Error, _) | (_, Value::Error) => Value::Error,
        _ => default,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_words() {
        assert_eq!(
            split_v2("a 'b c' 'it''s'"),
            Some(vec!["a".into(), "b c".into(), "it's".into()])
        );
        assert_eq!(split_v2("'open"), None);
        assert_eq!(quote_v2("a=x y"), "'a=x y'");
    }
}
