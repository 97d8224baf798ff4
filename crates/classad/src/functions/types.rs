//! The type predicates: `isUndefined(x)`, `isString(x)`, ... Each takes
//! exactly one argument and is true when it evaluates to that type.

use crate::eval::{Evaluator, Scope};
use crate::expr::Expr;
use crate::value::{Value, ValueType};

fn is_type(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope, ty: ValueType) -> Value {
    if args.len() != 1 {
        return Value::Error;
    }
    Value::Bool(ev.eval_arg(&args[0], scope).value_type() == ty)
}

pub fn is_undefined(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    is_type(ev, args, scope, ValueType::Undefined)
}
pub fn is_error(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    is_type(ev, args, scope, ValueType::Error)
}
pub fn is_string(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    is_type(ev, args, scope, ValueType::String)
}
pub fn is_integer(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    is_type(ev, args, scope, ValueType::Integer)
}
pub fn is_real(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    is_type(ev, args, scope, ValueType::Real)
}
pub fn is_list(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    is_type(ev, args, scope, ValueType::List)
}
pub fn is_classad(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    is_type(ev, args, scope, ValueType::ClassAd)
}
pub fn is_boolean(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    is_type(ev, args, scope, ValueType::Boolean)
}
pub fn is_abstime(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    is_type(ev, args, scope, ValueType::AbsTime)
}
pub fn is_reltime(ev: &mut Evaluator<'_>, args: &[Expr], scope: &Scope) -> Value {
    is_type(ev, args, scope, ValueType::RelTime)
}
