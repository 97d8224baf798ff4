#!/usr/bin/env python3
"""Cases for userHome(user [, default]) answered by HTCondor's own ClassAd
library (HTCondor 25.14.1, where CLASSAD_ENABLE_USER_HOME defaults to true,
so the function asks the password database with getpwnam).

Runs the shared oracle on the cases below and writes user_home.jsonl beside
this script; tests/vectors.rs runs it with an Env whose lookup knows one
user, `nobody`, at `/nonexistent` (Debian's entry), so the cases name only
`nobody` and users no machine has. The generator refuses to write the file
if the oracle's machine disagrees about `nobody`.

    ORACLE_PY=/path/to/python-with-htcondor-25.14.1 \\
        crates/classad/tests/data/gen_user_home.py [--oracle DIR]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
NOUSER = "no_such_user_fc17"
MY = '[me = "nobody"; nouser = "%s"; dflt = "/d"; empty = ""; n = 5]' % NOUSER

EXPRS = [
    # found; a found home wins over any default
    'userHome("nobody")',
    'userHome("nobody", "/d")',
    'userHome("nobody", "")',
    'userHome("nobody", 5)',
    'userHome("nobody", error)',
    'userHome("nobody", undefined)',
    'userHome("nobody", {"/d"})',
    # not found: the default if it is a non-empty string, else UNDEFINED
    'userHome("%s")' % NOUSER,
    'userHome("%s", "/d")' % NOUSER,
    'userHome("%s", "")' % NOUSER,
    'userHome("%s", 5)' % NOUSER,
    'userHome("%s", error)' % NOUSER,
    'userHome("%s", undefined)' % NOUSER,
    'userHome("")',
    'userHome("", "/d")',
    'userHome("NOBODY")',
    'userHome("nobody ")',
    # an undefined user
    'userHome(undefined)',
    'userHome(undefined, "/d")',
    'userHome(undefined, "")',
    'userHome(nosuch)',
    'userHome(nosuch, "/d")',
    # a user that is not a string
    'userHome(error)',
    'userHome(error, "/d")',
    'userHome(1)',
    'userHome(1, "/d")',
    'userHome(1, "")',
    'userHome(true)',
    'userHome({"nobody"})',
    'userHome({"nobody"}, "/d")',
    'userHome([a = 1])',
    'userHome(absTime(0))',
    # wrong number of arguments: HTCondor abandons the evaluation
    'userHome()',
    'userHome("nobody", "/d", "x")',
    'isError(userHome())',
    # composed
    'USERHOME("nobody")',
    'userHome("nobody") == "/nonexistent"',
    'size(userHome("nobody"))',
    'isUndefined(userHome("%s"))' % NOUSER,
    'strcat(userHome("%s", "/tmp"), "/x")' % NOUSER,
    # attribute references
    'userHome(me)',
    'userHome(me, dflt)',
    'userHome(nouser)',
    'userHome(nouser, dflt)',
    'userHome(nouser, empty)',
    'userHome(n, dflt)',
    'userHome(n)',
]


def cases():
    out = []
    for i, e in enumerate(EXPRS):
        out.append({"id": "userhome/%02d" % i, "expr": e, "my": MY})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--oracle", default=os.path.join(HERE, "..", "..", "..", "..", "..", "shared", "oracle"))
    args = ap.parse_args()
    text = "".join(json.dumps(c, sort_keys=True) + "\n" for c in cases())
    py = os.environ.get("ORACLE_PY", sys.executable)
    oracle = os.path.join(os.path.abspath(args.oracle), "classad_oracle.py")
    with tempfile.TemporaryDirectory() as tmp:
        inp = os.path.join(tmp, "cases.jsonl")
        res = os.path.join(tmp, "out.jsonl")
        with open(inp, "w", encoding="utf-8") as f:
            f.write(text)
        subprocess.run([py, oracle, "expr", "-i", inp, "-o", res], check=True)
        with open(res, encoding="utf-8") as f:
            results = f.read()
    first = json.loads(results.splitlines()[0])
    if first["value"].get("value") != "/nonexistent":
        raise SystemExit("this machine's `nobody` is not at /nonexistent: %s" % first["value"])
    with open(os.path.join(HERE, "user_home.jsonl"), "w", encoding="utf-8") as f:
        f.write(results)


if __name__ == "__main__":
    main()
