#!/usr/bin/env python3
"""Cases for the meta-comparison operators (=?=, =!=, is, isnt) over every
kind of value, answered by HTCondor's own ClassAd library.

Writes the cases (JSON lines, the input format of classad_oracle.py's `expr`
mode) and, unless --cases-only, runs the shared oracle on them to make
meta_compare.jsonl beside this script, which tests/vectors.rs runs.

    ORACLE_PY=/path/to/python-with-htcondor-25.14.1 \\
        crates/classad/tests/data/gen_meta_compare.py [--oracle DIR]

DIR is the shared oracle directory (default ../shared/oracle beside the
repository). The output is deterministic (fixed order, sorted JSON keys).

What the cases cover: each operand below against each other operand, with
=?= and =!= (is/isnt are the same operators in HTCondor's tree; they get
the diagonal and a sample of the pairs in their own spelling). Operands are
literals of every value type, values that functions build (HTCondor keeps
lists a function made, e.g. split(), as a different value type from list
literals, and =?= between different types is false), values reached through
selection and subscripts, and attribute references (in MY, in TARGET and
missing) to each kind of value.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# The ads the attribute references read. MY holds one attribute of each kind;
# TARGET a few more, for TARGET.x and the unscoped fallback to TARGET.
MY = (
    "[u=undefined;e=error;t=true;f=false;i=1;i2=1;r=1.0;s=\"a\";su=\"A\";"
    "at=absTime(\"2020-01-01T00:00:00+01:00\");rt=relTime(60);l={1,2};l2={1,2};"
    "ln={{1}};le={};sl=split(\"a b\");sl2=split(\"a b\");ad=[a=1];ad2=[a=1];"
    "ade=[];nested=[x={1};y=[a=1];z=split(\"q\")];self=i;lsel={[a=1],[a=2]}.a]"
)
TARGET = "[tl={1};tad=[a=1];ts=\"a\";ti=1;tsl=split(\"x\")]"

# (name, expression). Names become parts of case ids.
OPERANDS = [
    # exceptional values
    ("undef", "undefined"),
    ("error", "error"),
    # booleans, numbers
    ("true", "true"),
    ("false", "false"),
    ("int0", "0"),
    ("int1", "1"),
    ("intm1", "-1"),
    ("real0", "0.0"),
    ("real1", "1.0"),
    ("nan", "real(\"NaN\")"),
    # strings, case differences
    ("str_a", "\"a\""),
    ("str_A", "\"A\""),
    ("str_empty", "\"\""),
    ("str_1", "\"1\""),
    # absolute times: the same instant in two zones, another instant
    ("abs_p1", "absTime(\"2020-01-01T00:00:00+01:00\")"),
    ("abs_utc", "absTime(\"2019-12-31T23:00:00+00:00\")"),
    ("abs_other", "absTime(\"2021-06-01T00:00:00+00:00\")"),
    ("abs_int", "absTime(0)"),
    # relative times
    ("rel60", "relTime(60)"),
    ("rel60r", "relTime(60.0)"),
    ("rel61", "relTime(61)"),
    # list literals
    ("list_empty", "{}"),
    ("list_1", "{1}"),
    ("list_12", "{1, 2}"),
    ("list_21", "{2, 1}"),
    ("list_nested", "{{1}}"),
    ("list_ads", "{[a = 1]}"),
    ("list_undef", "{undefined}"),
    # lists built by functions
    ("split_ab", "split(\"a b\")"),
    ("split_a", "split(\"a\")"),
    ("splituser", "splitUserName(\"u@d\")"),
    ("splitslot", "splitSlotName(\"slot1@h\")"),
    ("argstolist", "argsToList(\"x y\")"),
    ("eachctx", "evalInEachContext(a, {[a = 1]})"),
    # lists reached otherwise
    ("sel_list", "{[a = 1], [a = 2]}.a"),
    ("sub_list", "{{1}}[0]"),
    ("sub_split", "{split(\"a\")}[0]"),
    ("ite_list", "ifThenElse(true, {1}, 2)"),
    ("eval_list", "eval(\"{1}\")"),
    ("elvis_list", "undefined ?: {1}"),
    # nested ads
    ("ad_empty", "[]"),
    ("ad_a1", "[a = 1]"),
    ("ad_a2", "[a = 2]"),
    ("ad_b", "[b = [c = 1]]"),
    ("splittime", "splitTime(0)"),
    ("sel_ad", "[y = [a = 1]].y"),
    ("sub_ad", "{[a = 1]}[0]"),
    # attribute references, one to each kind of value
    ("ref_missing", "nosuch"),
    ("ref_u", "u"),
    ("ref_e", "e"),
    ("ref_t", "t"),
    ("ref_i", "i"),
    ("ref_i2", "i2"),
    ("ref_r", "r"),
    ("ref_s", "s"),
    ("ref_su", "su"),
    ("ref_at", "at"),
    ("ref_rt", "rt"),
    ("ref_l", "l"),
    ("ref_l2", "l2"),
    ("ref_ln", "ln"),
    ("ref_le", "le"),
    ("ref_sl", "sl"),
    ("ref_sl2", "sl2"),
    ("ref_ad", "ad"),
    ("ref_ad2", "ad2"),
    ("ref_ade", "ade"),
    ("ref_nested_x", "nested.x"),
    ("ref_nested_y", "nested.y"),
    ("ref_nested_z", "nested.z"),
    ("ref_self", "self"),
    ("ref_lsel", "lsel"),
    ("ref_my_l", "MY.l"),
    ("ref_my", "MY"),
    ("ref_tl", "TARGET.tl"),
    ("ref_tad", "TARGET.tad"),
    ("ref_ts", "ts"),
    ("ref_tsl", "TARGET.tsl"),
    ("ref_target", "TARGET"),
]

# Operands used for the `is`/`isnt` spellings and the compositions below.
SAMPLE = [
    "undef", "error", "true", "int1", "real1", "str_a", "str_A", "abs_p1",
    "abs_utc", "rel60", "list_1", "list_12", "list_nested", "split_ab",
    "sel_list", "ad_a1", "ad_empty", "splittime", "ref_missing", "ref_u",
    "ref_e", "ref_l", "ref_l2", "ref_sl", "ref_ad", "ref_ad2", "ref_nested_z",
    "ref_tl", "ref_tad", "ref_target",
]

# The operators compose with the rest of the language: the result of a
# comparison that is ERROR or a boolean flows on.
EXTRA = [
    ("compose/not-list", "!({1} =?= {1})"),
    ("compose/not-list-int", "!({1} =?= 1)"),
    ("compose/or-list", "({1} =?= {1}) || true"),
    ("compose/and-list-int", "({1} =?= 1) && true"),
    ("compose/ternary-list", "({1} is {1}) ? 1 : 2"),
    ("compose/ternary-list-int", "({1} is 1) ? 1 : 2"),
    ("compose/chain", "{1} =?= {1} =?= error"),
    ("compose/chain2", "1 =?= {1} =?= false"),
    ("compose/isundef-list", "{1} is undefined"),
    ("compose/isnt-undef-ad", "[a = 1] isnt undefined"),
    ("compose/identicalmember-list", "identicalMember(1, {{1}, 1})"),
    ("compose/identicalmember-list-first", "identicalMember(2, {{1}, 1})"),
    ("compose/anycompare-is-list", "anyCompare(\"is\", {{1}, 1}, 1)"),
    ("compose/anycompare-is-list-none", "anyCompare(\"is\", {{1}}, 1)"),
    ("compose/allcompare-isnt-list", "allCompare(\"isnt\", {{1}, [a = 1]}, 1)"),
    ("compose/anycompare-is-lists", "anyCompare(\"is\", {{1}}, {1})"),
    ("compose/anycompare-isnt-ads", "anyCompare(\"isnt\", {[a = 1]}, [a = 1])"),
    ("compose/anycompare-is-split", "anyCompare(\"is\", {{1}}, split(\"1\"))"),
    ("compose/eq-list", "{1} == {1}"),
    ("compose/eq-list-int", "{1} == 1"),
    ("compose/ne-ad-undef", "[a = 1] != undefined"),
    ("compose/abs-zone-eq", "absTime(\"2020-01-01T00:00:00+01:00\") == absTime(\"2019-12-31T23:00:00+00:00\")"),
    ("compose/abs-zone-ne", "absTime(\"2020-01-01T00:00:00+01:00\") != absTime(\"2019-12-31T23:00:00+00:00\")"),
    ("compose/abs-plus-zero", "(absTime(\"2020-01-01T00:00:00+01:00\") + relTime(0)) =?= absTime(\"2020-01-01T00:00:00+01:00\")"),
    ("compose/abs-minus", "(absTime(\"2020-01-01T00:00:00+01:00\") - relTime(3600)) =?= absTime(\"2019-12-31T22:00:00+00:00\")"),
    ("compose/policy-like", "(TARGET.tl =?= undefined) || (TARGET.tl isnt {1})"),
]


def wrap(expr):
    """An operand as one side of a comparison: parenthesised unless atomic."""
    if expr.replace("_", "").replace(".", "").isalnum() or expr.startswith(("\"", "{", "[")):
        return expr
    return "(" + expr + ")"


def cases():
    """=?= over every pair of non-reference operands (evaluated alone) and
    over every pair with a reference in it drawn from REFS x (REFS + SAMPLE),
    both ways round (with the ads); =!= and the is/isnt spellings over
    SAMPLE x SAMPLE; then EXTRA, with and without the ads."""
    out = []
    by_name = dict(OPERANDS)
    literals = [n for n, _ in OPERANDS if not n.startswith("ref_")]
    refs = [n for n, _ in OPERANDS if n.startswith("ref_")]
    sample_literals = [n for n in SAMPLE if not n.startswith("ref_")]

    def add(opname, op, ln, rn, with_ads):
        case = {
            "id": "meta/%s/%s/%s" % (opname, ln, rn),
            "expr": "%s %s %s" % (wrap(by_name[ln]), op, wrap(by_name[rn])),
        }
        # Two literals need no ads (and the file stays smaller).
        if with_ads and (ln.startswith("ref_") or rn.startswith("ref_")):
            case["my"] = MY
            case["target"] = TARGET
        out.append(case)

    for ln in literals:
        for rn in literals:
            add("meq", "=?=", ln, rn, False)
    for ln in refs:
        for rn in refs:
            add("meq", "=?=", ln, rn, True)
        for rn in sample_literals:
            add("meq", "=?=", ln, rn, True)
            add("meq", "=?=", rn, ln, True)
    for ln in SAMPLE:
        for rn in SAMPLE:
            add("mne", "=!=", ln, rn, True)
    small = SAMPLE[::2]
    for opname, op in [("is", "is"), ("isnt", "isnt")]:
        for ln in small:
            for rn in small:
                add(opname, op, ln, rn, True)
    for opname, op in [("IS", "IS"), ("Isnt", "Isnt")]:
        for n in small:
            add(opname, op, n, n, True)
    for cid, expr in EXTRA:
        out.append({"id": "meta/" + cid, "expr": expr, "my": MY, "target": TARGET})
        out.append({"id": "meta/" + cid + "/alone", "expr": expr})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--oracle", default=os.path.join(HERE, "..", "..", "..", "..", "..", "shared", "oracle"))
    ap.add_argument("--cases-only", action="store_true", help="write the cases to stdout and stop")
    args = ap.parse_args()
    text = "".join(json.dumps(c, sort_keys=True, ensure_ascii=False) + "\n" for c in cases())
    if args.cases_only:
        sys.stdout.write(text)
        return
    py = os.environ.get("ORACLE_PY", sys.executable)
    oracle = os.path.join(os.path.abspath(args.oracle), "classad_oracle.py")
    with tempfile.TemporaryDirectory() as tmp:
        inp = os.path.join(tmp, "cases.jsonl")
        with open(inp, "w", encoding="utf-8") as f:
            f.write(text)
        subprocess.run([py, oracle, "expr", "-i", inp, "-o", os.path.join(HERE, "meta_compare.jsonl")], check=True)


if __name__ == "__main__":
    main()
