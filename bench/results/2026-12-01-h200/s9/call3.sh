# call3 (ninth session): GPT-2 small, tgc against llm.c with the same cuDNN for both, twice:
# the toolkit's (9.14 on this image, what both load by default) and torch's wheel's (9.19,
# first on LD_LIBRARY_PATH; tgc dlopens libcudnn.so.9, llm.c links it). 3 repetitions, each
# alternating the two libraries; tgc (the session's runtime), llm.c -r 0 and -r 0 -ge 2.
set -u
source scripts/gpu-lib.sh
gpu_unpack s9c3
TL=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(nvidia.cudnn.__path__[0], 'lib'))")
ls $TL | grep -m2 libcudnn; ls /usr/local/cuda/lib64 | grep -m2 libcudnn
export B L TL
for r in 1 2 3; do
  for lib in tk tl; do
    lp=/usr/local/cuda/lib64 first=; [ $lib = tl ] && lp=$TL:/usr/local/cuda/lib64 first=$TL
    mkdir -p $L/$lib
    LLMC_LIB_FIRST=$first LD_LIBRARY_PATH=$lp REP_FROM=$r timeout 150 bash -c 'source scripts/gpu-lib.sh; steps_ab $B $L/'$lib' 1 gpt2s "- llmc-r0 llmc-r0ge2"'
    echo "rep $r $lib rc $?"
  done
done
for lib in tk tl; do echo "$lib: $(grep -h "libcudnn.so.9 =>" $L/$lib/llmc/*.log | sort | uniq -c)"; done
for lib in tk tl; do echo "== cuDNN: $lib"; steps_summary $L/$lib; done
cd $L && tar -cJf $OUT/logs.tar.xz . && ls -la $OUT
