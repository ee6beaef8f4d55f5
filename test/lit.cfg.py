# -*- Python -*-
import os
import shutil

import lit.formats
from lit.llvm import llvm_config

config.name = "TG"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "unit", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tg_obj_root, "test")

config.environment["FILECHECK_OPTS"] = "-enable-var-scope --allow-unused-prefixes=false"
config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%tg_src", config.tg_src_root))
# scripts/asan.sh: Python loads ASan-built tgc libraries, so the sanitizer runtimes must be
# preloaded into it (TGC_LD_PRELOAD="libasan.so libubsan.so").
_preload = os.environ.get("TGC_LD_PRELOAD", "").strip()
config.substitutions.append(
    ("%python", "env LD_PRELOAD='%s' /usr/bin/python3" % _preload if _preload else "/usr/bin/python3"))

llvm_config.with_system_environment(["HOME", "TMPDIR", "TGC_HOST_FLAGS", "ASAN_OPTIONS", "UBSAN_OPTIONS"])
llvm_config.use_default_substitutions()
tool_dirs = [config.tg_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["tg-opt", "tgc"], tool_dirs)
llvm_config.with_environment("PATH", config.tg_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

if config.tg_cuda in ("ON", "1", "TRUE"):
    config.available_features.add("cuda-build")
if shutil.which("nvidia-smi") and os.system("nvidia-smi -L >/dev/null 2>&1") == 0:
    config.available_features.add("cuda")
# scripts/asan.sh (TGC_HOST_FLAGS with -fsanitize=address): ASan reserves terabytes of
# address space, so tests that cap it (ulimit -v) cannot run.
if "sanitize=address" in os.environ.get("TGC_HOST_FLAGS", ""):
    config.available_features.add("asan")
if os.system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0:
    config.available_features.add("torch")
# Hugging Face transformers in the venv scripts/setup.sh creates (over Debian's torch).
hf_python = os.path.join(config.tg_src_root, ".venv-hf", "bin", "python")
if os.path.exists(hf_python) and os.system(
        "'%s' -c 'import transformers' >/dev/null 2>&1" % hf_python) == 0:
    config.available_features.add("transformers")
config.substitutions.append(("%hfpython", hf_python))

# In CI (CI=true, .ci/run) a missing prerequisite is a failure, not a skipped test: the
# features every CI machine provides (scripts/setup.sh installs them) must be present. Only
# `cuda` (a GPU) and `asan` (scripts/asan.sh) may be absent there; `cuda-build` is required
# when the toolkit is installed (setup.sh then builds the CUDA backend).
if os.environ.get("CI") == "true":
    _required = ["torch", "transformers"]
    if os.path.exists("/usr/local/cuda/bin/nvcc"):
        _required.append("cuda-build")
    _missing = [f for f in _required if f not in config.available_features]
    if _missing:
        lit_config.fatal(
            "CI=true: prerequisite feature(s) %s missing, so the tests that REQUIRE them would "
            "be skipped silently; check scripts/setup.sh's install of PyTorch "
            "(/usr/bin/python3 -c 'import torch'), the .venv-hf transformers venv (%s) and the "
            "CUDA configure (TGC_CUDA)" % (", ".join(_missing), hf_python))
