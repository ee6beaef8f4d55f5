#!/usr/bin/env bash
# AddressSanitizer + UBSan over every CPU suite, in one command (docs/testing.md,
# "Sanitizers"). Builds build-asan/ (Debug, CUDA off, -O1 -fsanitize=address,undefined; the
# executables and libraries tgc compiles get the same flags through TGC_HOST_FLAGS), then runs
# ctest (GoogleTest binaries, fuzz-corpus replays) and every lit test, with the ASan runtime
# preloaded into Python for the tests that load tgc libraries into PyTorch.
#   scripts/asan.sh            build + all suites (~40 min on 2 cores, most of it the build)
#   scripts/asan.sh --no-build run the suites on an existing build-asan/
# Exit status: non-zero when the build or any suite fails. Logs: build-asan/asan-*.log.
set -u -o pipefail
cd "$(dirname "$0")/.."
BUILD=build-asan
FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer"
if [ "${1:-}" != --no-build ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTGC_ENABLE_CUDA=OFF \
    -DCMAKE_CXX_FLAGS="$FLAGS -O1" \
    -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined \
    -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined \
    -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-19/build/utils/lit/lit.py >/dev/null || exit 1
  ninja -C "$BUILD" -j"${JOBS:-2}" || exit 1
fi
# MLIR's intentional leaks; one runtime test plans 2^62 bytes and expects a null allocation.
export ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TGC_HOST_FLAGS="$FLAGS"
# Python (lit's PyTorch tests) loads ASan-built libraries: the runtime must come first.
export TGC_LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
(cd "$BUILD" && ctest -E cuda-emu --output-on-failure) >"$BUILD/asan-ctest.log" 2>&1
rc_ctest=$?
tail -3 "$BUILD/asan-ctest.log"
python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv "$BUILD/test" >"$BUILD/asan-lit.log" 2>&1
rc_lit=$?
grep -E "^(FAIL|UNRESOLVED|XPASS|TIMEOUT):|Passed|Failed|Unsupported" "$BUILD/asan-lit.log" | tail -20
echo "asan: ctest exit $rc_ctest, lit exit $rc_lit (logs: $BUILD/asan-ctest.log, $BUILD/asan-lit.log)"
[ $rc_ctest -eq 0 ] && [ $rc_lit -eq 0 ]
