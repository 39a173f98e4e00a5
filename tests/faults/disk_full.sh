#!/bin/sh
# The sink's disk fills up mid-stream: its file lies on a small tmpfs
# (SIZE, default 1m), which the test mounts (root only; otherwise it is
# skipped with exit 77, ctest's SKIP_RETURN_CODE) and always unmounts.
#   disk_full.sh EXPECT_FAIL MOUNT_DIR H5DUMP CPL_RUN WORKFLOW [SIZE]
# The job must fail within 20 s naming the file, the step and "No space
# left on device", and say how many steps it wrote before; those steps
# must be in the file, complete (each dataset x of 8192 elements) and
# readable by h5dump, and no step group after them.
set -u
expect=$1 mnt=$2 h5dump=$3 run=$4 yaml=$5 size=${6:-1m}
mkdir -p "$mnt" || exit 1
# A run killed by ctest's timeout cannot unmount: do it now.
if mountpoint -q "$mnt" 2>/dev/null; then umount "$mnt" || exit 1; fi
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o "size=$size" cpl-disk-full "$mnt" 2>/dev/null; then
  echo "SKIP: cannot mount a tmpfs on $mnt (needs root and mount rights)"
  exit 77
fi
trap 'umount "$mnt"' EXIT
trap 'exit 1' INT TERM
file=$mnt/out.h5
log=$mnt/../disk_full.log
sh "$expect" -t 20 -h "$h5dump $file" \
  -e "hdf5 sink \"writer\": file \"$file\": link prod.out->writer.in: step [0-9]+: .*No space left on device.*; the [0-9]+ steps written before are complete in the file" \
  -- "$run" "$yaml" > "$log" 2>&1
rc=$?
cat "$log"
[ $rc -eq 0 ] || exit 1
n=$(sed -n 's/.*; the \([0-9]*\) steps written before are complete in the file.*/\1/p' "$log")
# Every step group the file lists, with its dataset's shape.
groups=$("$h5dump" -n "$file" | grep -Ec '^ *group +/step_[0-9]+$')
full=$("$h5dump" -H "$file" | grep -c 'DATASPACE  SIMPLE { ( 8192 ) / ( 8192 ) }')
last=$("$h5dump" -n "$file" | sed -n 's|^ *group */step_0*\([0-9][0-9]*\)$|\1|p' | sort -n | tail -1)
echo "disk_full: the sink reported $n steps written; the file lists $groups step groups (last step ${last:-none}), $full datasets of 8192 elements"
[ -n "$n" ] && [ "$n" -ge 1 ] || { echo "disk_full: FAILED: no step written before the disk was full"; exit 1; }
[ "$groups" -eq "$n" ] && [ "$full" -eq "$n" ] && [ "$last" -eq $((n - 1)) ] ||
  { echo "disk_full: FAILED: the file does not hold exactly the $n complete steps"; exit 1; }
"$h5dump" -d "/step_$(printf %06d "$last")/x" "$file" > /dev/null ||
  { echo "disk_full: FAILED: the last complete step's data cannot be read"; exit 1; }
echo "disk_full: ok"
