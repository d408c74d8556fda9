#!/usr/bin/env bash
# A stand-in for fio in the io.fio failure tests (--set io.fio.binary=THIS). $FAKE_FIO_MODE:
#   einval: with CB_FIO_DIRECT=1, fail as fio does on a filesystem that refuses O_DIRECT (a file
#           left in the scratch directory, fio's messages, a job with error 22); with
#           CB_FIO_DIRECT=0, write this process's open descriptors to $FAKE_FIO_FDS and run the
#           real fio.
#   orphan: leave a `sleep 31.4159` running in the scratch directory and run the real fio.
#   segv: die by SIGSEGV; silent: print nothing and exit 0.
#   enospc: leave a file in the scratch directory and print fio 3.33's real output of a job that
#           hit ENOSPC (tests/fixtures/fio/fio-3.33-enospc.json), exit 1 as fio does.
#   badbytes: run the real fio, with bytes that are not UTF-8 (\xff\xfe) in a warning line before
#           its JSON, in its job names, and on its stderr.
set -u
case "${FAKE_FIO_MODE:-}" in
einval)
  if [ "${CB_FIO_DIRECT:-1}" = 1 ]; then
    : >"$CB_FIO_DIR/job.0.0"
    echo "fio: looks like your file system does not support direct=1/buffered=0" >&2
    echo "fio: destination does not support O_DIRECT" >&2
    echo "fio: pid=$$, err=22/file:filesetup.c:805, func=open(${CB_FIO_DIR}/job.0.0), error=Invalid argument"
    cat <<JSON
{
  "fio version" : "fio-3.33",
  "jobs" : [ { "jobname" : "job", "groupid" : 0, "error" : 22, "eta" : 0, "elapsed" : 0,
               "read" : { "io_bytes" : 0, "bw_bytes" : 0, "bw" : 0, "iops" : 0.0, "total_ios" : 0 },
               "write" : { "io_bytes" : 0, "bw_bytes" : 0, "bw" : 0, "iops" : 0.0, "total_ios" : 0 } } ]
}
JSON
    exit 1
  fi
  echo "$CB_FIO_DIRECT" >>"${FAKE_FIO_LOG:-/dev/null}"
  # The descriptors clusterbench left open in its child ("FD TARGET" lines), for the test.
  # A child inherits what fio would (bash's own script descriptor is close-on-exec); its fd 1 is
  # the list.
  python3 -c '
import os
for fd in sorted(map(int, os.listdir("/proc/self/fd"))):
    try:
        print(fd, os.readlink("/proc/self/fd/%d" % fd))
    except OSError:
        pass  # the directory listdir read
' >"${FAKE_FIO_FDS:-/dev/null}"
  exec fio "$@"
  ;;
orphan)
  # Leaves a process behind in its group, as fio's job processes are when fio itself crashes, and
  # runs the real fio.
  (cd "$CB_FIO_DIR" && exec sleep 31.4159) &
  exec fio "$@"
  ;;
badbytes)
  set -o pipefail
  printf 'fio: warning \xff\xfe\n'
  printf 'fio: note \xff\xfe\n' >&2
  fio "$@" | sed 's/"jobname" : "\([^"]*\)"/"jobname" : "\1\xff\xfe"/'
  ;;
segv) kill -SEGV $$ ;;
silent) exit 0 ;;
enospc)
  : >"$CB_FIO_DIR/w.0.0"
  cat "$CB_FIXTURES/fio/fio-3.33-enospc.json"
  echo "fio: io_u error on file $CB_FIO_DIR/w.0.0: No space left on device: write offset=4194304, buflen=1048576" >&2
  exit 1
  ;;
*)
  echo "fake_fio.sh: FAKE_FIO_MODE must be einval, orphan, segv, silent, enospc or badbytes" >&2
  exit 2
  ;;
esac
