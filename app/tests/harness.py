"""harness.py: the main() loop the attnscope-cli test scripts share.

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import harness

    def main():
        global CLI
        CLI = harness.cli_argument("cli_smoke_test.py")
        return harness.run_main("cli_smoke", TESTS, tmp_prefix="attnscope-smoke-")

A test is a function, named by its __name__, or a (name, function) pair for
table-driven cases. It passes when it returns and fails when it raises
AssertionError, hangs (subprocess.TimeoutExpired) or raises one of the
exception types the script passes as `catch`; its failure is one line,
"FAIL name: message" (the message may go on over more lines). Any other
exception is a bug in the test: it ends the script with its traceback.

Exit status, as CTest reads it (SKIP_RETURN_CODE 77 in the CMakeLists):
0 all passed, 1 any failure, 2 a wrong command line, 77 skipped because a
module the script needs (torch, numpy) cannot be imported.

Standard library only: a script must be able to import this module, and
say that it skips, where torch and numpy are missing.
"""

import importlib
import subprocess
import sys
import tempfile

EXIT_PASSED = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_SKIPPED = 77

TORCH_HINT = "install Debian's python3-torch and run with /usr/bin/python3"


def cli_argument(script):
    """The script's one argument, path/to/attnscope-cli; prints the usage line
    and exits 2 when the command line is anything else."""
    if len(sys.argv) != 2:
        print(f"usage: {script} path/to/attnscope-cli", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    return sys.argv[1]


def require(who, *modules, what=None, hint=TORCH_HINT):
    """Imports the named modules and returns them (one module, or a list).
    When one cannot be imported, prints "<who>: SKIP: cannot import <what>
    (<why>); <hint>" and exits 77: CTest reports the test as skipped."""
    try:
        loaded = [importlib.import_module(name) for name in modules]
    except Exception as exc:  # ImportError, or a broken install
        print(f"{who}: SKIP: cannot import {what or '/'.join(modules)} ({exc})"
              + (f"; {hint}" if hint else ""))
        sys.exit(EXIT_SKIPPED)
    return loaded[0] if len(loaded) == 1 else loaded


def describe(exc):
    """A failed test's message: an assertion's own text, or the exception's type and text."""
    if isinstance(exc, subprocess.TimeoutExpired):
        return f"hung, no exit within {exc.timeout} s: {exc.cmd}"
    if isinstance(exc, AssertionError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def run_tests(tests, *args, catch=(), show_passes=False):
    """Calls each test with args; prints "FAIL name: ..." for each failure (and
    "ok   name" for each pass when show_passes). Returns (passed, failed)."""
    passed = failed = 0
    for test in tests:
        name, function = test if isinstance(test, tuple) else (test.__name__, test)
        try:
            function(*args)
        except (AssertionError, subprocess.TimeoutExpired, *catch) as exc:
            failed += 1
            print(f"FAIL {name}: {describe(exc)}")
        else:
            passed += 1
            if show_passes:
                print(f"ok   {name}")
    return passed, failed


def summary(name, passed, failed, skipped_parts=None, missing=False):
    """Prints one "SKIP part" line per skipped part, then the summary line
    "<name>: N passed, M failed" (with ", K parts skipped" when the script
    counts skipped parts). Returns the exit status: 1 when a test failed,
    else 77 when `missing` (a module the script needs is not installed),
    else 0."""
    extra = ""
    if skipped_parts is not None:
        for part in skipped_parts:
            print(f"SKIP {part}")
        extra = f", {len(skipped_parts)} parts skipped"
    print(f"{name}: {passed} passed, {failed} failed{extra}")
    if failed:
        return EXIT_FAILED
    return EXIT_SKIPPED if missing else EXIT_PASSED


def run_main(name, tests, *, tmp_prefix=None, catch=(), show_passes=False,
             skipped_parts=None, missing=False):
    """The whole loop: runs the tests and returns summary()'s exit status.
    With tmp_prefix, every test is given the path of one temporary folder,
    made for the run and removed at its end."""
    if tmp_prefix is None:
        passed, failed = run_tests(tests, catch=catch, show_passes=show_passes)
    else:
        with tempfile.TemporaryDirectory(prefix=tmp_prefix) as tmp:
            passed, failed = run_tests(tests, tmp, catch=catch, show_passes=show_passes)
    return summary(name, passed, failed, skipped_parts=skipped_parts, missing=missing)


def report_failures(name, failures):
    """For scripts that collect failure messages in a list instead of running
    tests: prints "FAIL: ..." for each, then "<name>: N failure(s)"; returns
    the exit status, 1 when there is any."""
    for failure in failures:
        print("FAIL:", failure)
    print(f"{name}: {len(failures)} failure(s)")
    return EXIT_FAILED if failures else EXIT_PASSED
