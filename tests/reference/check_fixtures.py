#!/usr/bin/python3
"""Re-runs every fixture maker of scripts/reference (make_*fixtures.py) into a temporary folder and requires
the files it writes to be identical to the committed tests/fixtures/<set>/, so that fixtures cannot drift from
the scripts that claim to make them. Run by ctest (tests/reference/CMakeLists.txt); exits 1 naming every
difference.

    /usr/bin/python3 tests/reference/check_fixtures.py

Identical, with these provisos (scripts/reference/README.md):
- BLAS: the makers re-run themselves under Debian's reference BLAS, as when the fixtures were made.
- CPU kernels: PyTorch picks vectorised kernels by CPU; other kernels round differently (its scalar kernels
  change float64 results in the last bits and even draw other torch.randn numbers), so the makers run with
  the AVX2 kernels that made the committed files (ATEN_CPU_CAPABILITY=avx2, PyTorch 1.13's default on x86-64).
- Other CPU models: even so, some float64 results round differently in the last bits (an Intel Xeon remade the
  ASAP KL fits up to 4e-16 away from the files an AMD EPYC made; which library rounds differently is not known), so .npy arrays and JSON numbers that are not
  byte-identical must agree within 1e-13 of the largest magnitude in their array (or of the JSON number); a
  changed maker moves them by far more. Shapes, dtypes, integers, strings and non-finite values stay exact.
- TorchScript archives record the maker's absolute path and source lines as debug information: inside a zip
  archive, the *.debug_pkl entries are not compared; every other entry must be identical.
"""
import concurrent.futures
import filecmp
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAKERS = os.path.join(REPO, "scripts", "reference")
FIXTURES = os.path.join(REPO, "tests", "fixtures")
SETUP_HINT = "run scripts/setup, which installs python3-torch"


def fail(message):
    print("check_fixtures: " + message, file=sys.stderr)
    sys.exit(1)


def fixture_set(maker):
    """The tests/fixtures folder a maker writes by default: the folder it names to fixture_io."""
    with open(maker) as f:
        found = re.search(r'fx\.(?:start|parse_args)\(__doc__, "(\w+)"', f.read())
    if not found:
        fail(f"cannot tell which tests/fixtures folder {os.path.basename(maker)} writes")
    return found.group(1)


def run_maker(maker, out, env):
    result = subprocess.run([sys.executable, maker, "--out", out], env=env, capture_output=True, text=True)
    return maker, result


def files_under(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, files in os.walk(root) for f in files)


LAST_BITS = 1e-13  # relative: see the libm proviso above


def arrays_agree(made, committed):
    """Two .npy files hold the same array up to last-bit rounding of their floating values."""
    import numpy as np
    a, b = np.load(made), np.load(committed)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if not np.issubdtype(a.dtype, np.floating):
        return np.array_equal(a, b)
    finite = np.isfinite(b)
    if not np.array_equal(np.isfinite(a), finite) or not np.array_equal(a[~finite], b[~finite], equal_nan=True):
        return False
    scale = np.abs(b[finite]).max(initial=0.0)
    return bool(np.all(np.abs(a[finite] - b[finite]) <= LAST_BITS * scale))


def json_agrees(made, committed):
    """Two JSON values are the same up to last-bit rounding of their non-integer numbers."""
    if isinstance(made, float) and isinstance(committed, float):
        return made == committed or abs(made - committed) <= LAST_BITS * max(abs(made), abs(committed))
    if isinstance(made, dict) and isinstance(committed, dict):
        return made.keys() == committed.keys() and all(json_agrees(made[k], committed[k]) for k in made)
    if isinstance(made, list) and isinstance(committed, list):
        return len(made) == len(committed) and all(json_agrees(a, b) for a, b in zip(made, committed))
    return type(made) is type(committed) and made == committed


def numbers_agree(made, committed):
    """Whether two differing files are .npy arrays or JSON documents that agree up to last-bit rounding."""
    if made.endswith(".npy"):
        return arrays_agree(made, committed)
    if made.endswith(".json"):
        with open(made) as a, open(committed) as b:
            return json_agrees(json.load(a), json.load(b))
    return False


def zip_entries_differ(made, committed):
    """Names of the zip entries that differ, TorchScript's path-dependent *.debug_pkl records left out; None when
    either file is not a zip archive."""
    if not (zipfile.is_zipfile(made) and zipfile.is_zipfile(committed)):
        return None
    with zipfile.ZipFile(made) as a, zipfile.ZipFile(committed) as b:
        if a.namelist() != b.namelist():
            return ["(entry list)"]
        return [n for n in a.namelist() if not n.endswith(".debug_pkl") and a.read(n) != b.read(n)]


def compare(made, committed):
    """Every difference between a regenerated folder and the committed one."""
    problems = []
    made_files, committed_files = files_under(made), files_under(committed)
    problems += [f"{f}: in tests/fixtures but not made" for f in sorted(set(committed_files) - set(made_files))]
    problems += [f"{f}: made but not committed" for f in sorted(set(made_files) - set(committed_files))]
    for f in sorted(set(made_files) & set(committed_files)):
        a, b = os.path.join(made, f), os.path.join(committed, f)
        if filecmp.cmp(a, b, shallow=False) or numbers_agree(a, b):
            continue
        entries = zip_entries_differ(a, b)
        if entries is None:
            problems.append(f"{f}: differs")
        elif entries:
            problems.append(f"{f}: differs in {', '.join(entries[:5])}")
    return problems


def main():
    env = dict(os.environ, ATEN_CPU_CAPABILITY="avx2")
    probe = subprocess.run([sys.executable, "-c", "import numpy, torch; print(torch.__config__.show())"], env=env,
                           capture_output=True, text=True)
    if probe.returncode != 0:
        reason = (probe.stderr.strip().splitlines() or ["no message"])[-1]
        fail(f"{sys.executable} cannot import torch and numpy ({reason}): {SETUP_HINT}")
    if "CPU capability usage: AVX2" not in probe.stdout:
        fail("PyTorch does not run its AVX2 kernels on this CPU, which made the committed fixtures; they cannot be "
             "reproduced bit for bit here")

    makers = sorted(glob.glob(os.path.join(MAKERS, "make_*fixtures.py")))
    sets = {maker: fixture_set(maker) for maker in makers}
    committed_sets = {d for d in os.listdir(FIXTURES) if os.path.isdir(os.path.join(FIXTURES, d))}
    unmade = sorted(committed_sets - set(sets.values()))
    if unmade:
        fail(f"no maker in scripts/reference writes tests/fixtures/{', '.join(unmade)}")

    problems = []
    with tempfile.TemporaryDirectory(prefix="tl-fixtures-") as work:
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            runs = [pool.submit(run_maker, m, os.path.join(work, sets[m]), env) for m in makers]
            for run in concurrent.futures.as_completed(runs):
                maker, result = run.result()
                if result.returncode != 0:
                    problems.append(f"{os.path.basename(maker)} failed (exit {result.returncode}):\n{result.stderr}")
        if not problems:
            for maker in makers:
                name = sets[maker]
                problems += [f"tests/fixtures/{name}/{p} (by {os.path.basename(maker)})"
                             for p in compare(os.path.join(work, name), os.path.join(FIXTURES, name))]
    if problems:
        fail("the committed fixtures are not what scripts/reference makes now; regenerate them (see "
             "scripts/reference/README.md) or fix the maker:\n  " + "\n  ".join(problems))
    print(f"check_fixtures: {len(makers)} makers re-made tests/fixtures/{{{','.join(sorted(sets.values()))}}} "
          "identically (up to last-bit rounding of numbers)")


if __name__ == "__main__":
    main()
