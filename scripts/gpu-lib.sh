# gpu-lib.sh — shared by the GPU scripts (sourced; runs on the GPU machine, builds nothing).

# unpack NAME: runs/NAME, runs/NAME.xz or runs/NAME.gz -> path of an executable file ("" when
# none was carried); compressed ones are unpacked to /tmp.
unpack() {
  local f=$1; case "$f" in runs/*) ;; *) f=runs/$f ;; esac
  local t=/tmp/$(basename "$f")
  if [ -x "$f" ]; then echo "$f";
  elif [ -f "$f.xz" ]; then python3 -c "import lzma,sys;open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$f.xz" "$t" && chmod +x "$t" && echo "$t";
  elif [ -f "$f.gz" ]; then gunzip -c "$f.gz" > "$t" && chmod +x "$t" && echo "$t";
  else echo ""; fi
}
