# lit configuration of tilepipe's per-construct tests: one .cu file per construct family, many
# kernels in it, each with the remark it must get (CHECK-MESSAGES), and where it matters what its
# loop becomes (CHECK-FIXES) and its plan from the JSON report (CHECK-PLAN). check_tilepipe.py runs
# tilepipe once per file and FileCheck once per prefix, as clang-tidy's check_clang_tidy.py does.
#
# CTest runs it with the paths as parameters (tests/CMakeLists.txt); by hand:
#   lit-22 -sv --param tilepipe=build/tool/tilepipe --param filecheck=$(llvm-config-22 --bindir)/FileCheck \
#       --param output=build/tests/lit tests/lit
import os
import sys
import tempfile

import lit.formats

config.name = "tilepipe"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".cu"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
# The temporary files (%t) go under the build tree, never beside the sources.
config.test_exec_root = os.path.abspath(lit_config.params.get("output") or os.path.join(
    tempfile.gettempdir(), "tilepipe-lit"))


def required(name):
    value = lit_config.params.get(name)
    if not value:
        lit_config.fatal("missing --param %s=<path>" % name)
    return os.path.abspath(value)  # the tests run in their own folders


tilepipe = required("tilepipe")
filecheck = required("filecheck")
runner = os.path.join(config.test_source_root, "check_tilepipe.py")
config.substitutions.append(
    ("%check_tilepipe", '"%s" "%s" --tilepipe "%s" --filecheck "%s"' % (sys.executable, runner, tilepipe, filecheck)))
config.environment["PATH"] = os.environ.get("PATH", "")
for var in ("CUDA_PATH", "HOME", "TMPDIR", "TILEPIPE_CACHE_DIR", "XDG_CACHE_HOME"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
