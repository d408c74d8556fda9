// Where io benchmarks may write: the scratch directory, its filesystem, free space, and cleanup
// (docs/fio.md "Safety"). Nothing here writes outside a directory it created itself.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/api/abort_cleanup.hpp"
#include "records/records.hpp"

namespace clusterbench::io {

/// One line of /proc/self/mountinfo (proc(5)): mount point, filesystem type, source, options,
/// and the filesystem's device number.
struct Mount {
  std::string mount_point, fs_type, source, options;
  std::string dev;  ///< "major:minor" (field 3): the block device, or 0:N (tmpfs, btrfs, nfs)
};

/// Parses /proc/self/mountinfo text; octal escapes (\040) in paths are decoded. Malformed lines
/// are skipped.
std::vector<Mount> parse_mountinfo(const std::string& text);

/// Reads `fs_root`/proc/self/mountinfo; empty when it cannot be read.
std::vector<Mount> read_mountinfo(const std::string& fs_root = "/");

/// The mount holding `path` (longest mount-point prefix), or nullptr.
const Mount* mount_of(const std::string& path, const std::vector<Mount>& mounts);

/// True for network and cluster filesystems (nfs, nfs4, cifs, smb3, ceph, lustre, gpfs, beegfs,
/// glusterfs, 9p, fuse.sshfs, ...): never a default scratch target.
bool is_network_fs(const std::string& fs_type);

/// The default scratch directory and why it was chosen.
struct ScratchChoice {
  std::string dir;
  std::string reason;
};

/// One whole disk as sysfs describes it (/sys/class/block/NAME and the device it links to).
struct Disk {
  std::string name;                     ///< kernel name: nvme0n1, sda, vda
  std::string model, serial, firmware;  ///< "" where sysfs has none (virtio has no model)
  std::string subsystem;                ///< of its `device`: nvme, nvme-subsystem, scsi, virtio
  /// nvme: the controller's `transport` (pcie, tcp, rdma, fc, loop); scsi: sata, sas, usb,
  /// iscsi or scsi (lsblk's reading of the device path); else the subsystem; "" unknown.
  std::string transport;
  bool nvme = false;               ///< its device's subsystem is nvme or nvme-subsystem
  std::optional<bool> rotational;  ///< queue/rotational; nullopt when unreadable
};

/// The whole disks under block device `dev` ("major:minor"), through sysfs below `fs_root`:
/// /sys/dev/block/MAJ:MIN, a partition's parent disk, and the `slaves/` of dm and md devices,
/// followed down to disks (LVM on a partition, RAID over several drives). `block_device` gets
/// the kernel name of `dev` itself (nvme0n1p1, dm-0); `why` says why the result is empty.
std::vector<Disk> disks_of(const std::string& dev, const std::string& fs_root,
                           std::string* block_device, std::string* why);

/// What a scratch directory is on: its mount and the disks below it.
struct ScratchDevice {
  std::string path;                               ///< the directory (or raw device) asked about
  std::string mount_point, fs_type, source, dev;  ///< its mount ("" for a raw device)
  std::string block_device;                       ///< the mounted device: nvme0n1p1, dm-0; "" none
  std::vector<Disk> disks;                        ///< the whole disks below it
  std::string reason;                             ///< why `disks` is empty
  /// Every disk is NVMe on PCIe (an NVMe-oF namespace, over tcp or rdma, is not local).
  bool local_nvme() const;
  /// One line for people: "nvme0n1 (NVMe pcie, non-rotational, model M, serial S), xfs on
  /// /mnt/nvme via nvme0n1p1"; "vda (virtio, rotational, model unknown, serial S), ext4 on /".
  std::string summary() const;
};

/// Resolves `path` to the device it is on: the mount holding it (mount_of), that mount's
/// major:minor (disks_of), else, for filesystems whose number is not their device's (btrfs),
/// the mount source's /dev path followed through its symlinks (/dev/disk/by-uuid/...,
/// /dev/mapper/...) to /sys/class/block/NAME. All below `fs_root`.
ScratchDevice scratch_device(const std::string& path, const std::vector<Mount>& mounts,
                             const std::string& fs_root = "/");

/// extra.scratch_device of an io record (docs/records.md, docs/fio.md "Records"): the fields of
/// `d`, `disk`/`model`/`serial`/`firmware`/`transport` over its disks (distinct values joined
/// with "+"), `nvme` (every disk), `rotational` (any disk), `local_nvme`, `disks` and `summary`;
/// unknown values are null.
json scratch_device_json(const ScratchDevice& d);

/// scratch_device_json of `path` on this system: /proc/self/mountinfo for a directory, the
/// device number (st_rdev) for a raw block device.
json scratch_device_evidence(const std::string& path);

/// Picks the default scratch directory: the writable local mount whose disks are all NVMe on
/// PCIe as sysfs says (scratch_device below `fs_root`; LVM, md and /dev/disk/by-uuid sources
/// included, names not consulted) with the most free bytes (`free_bytes(dir)`), else `tmpdir`.
/// Network filesystems are never chosen.
ScratchChoice default_scratch(const std::vector<Mount>& mounts, const std::string& tmpdir,
                              const std::function<long long(const std::string&)>& free_bytes,
                              const std::string& fs_root = "/");

/// The overload above on this system. `devices` (the inventory) is not consulted: kept for
/// io/fio.cpp's caller until it moves to the overload above.
ScratchChoice default_scratch(const std::vector<BlockDevice>& devices,
                              const std::vector<Mount>& mounts, const std::string& tmpdir,
                              const std::function<long long(const std::string&)>& free_bytes);

/// The system's temporary directory: $TMPDIR, else /tmp.
std::string system_tmpdir();

/// Bytes available to this user on the filesystem of `dir` (statvfs f_bavail x f_frsize);
/// -1 when statvfs fails.
long long free_bytes(const std::string& dir);

/// Bytes block device `name` has read and written since boot, from the text of /proc/diskstats:
/// sectors read (field 6) plus sectors written (field 10), x 512 B (the kernel counts 512-byte
/// sectors whatever the device's own; Documentation/admin-guide/iostats.rst). -1 when no line
/// names `name`.
long long diskstats_bytes(const std::string& diskstats_text, const std::string& name);

/// Bytes this process's waited-for children read from and wrote to storage: getrusage
/// (RUSAGE_CHILDREN) ru_inblock + ru_oublock, in 512-byte blocks. Around one fio run, what fio
/// itself moved, its file layout and ramp included (measured here: equal to /proc/diskstats'
/// count for the disk to the MB).
long long children_io_bytes();

/// The disk whose /proc/diskstats line shows every byte that shares the scratch's device, from
/// scratch_device_json `device`: its one whole disk (a partition's or one disk's LVM), else the
/// mounted device itself (md or dm over several disks); "" when neither is known.
std::string load_disk(const json& device);

/// Removes `path` and everything below it in a child process and waits at most `seconds`: on a
/// frozen or hung filesystem the child goes on once it answers, and the caller is not held. The
/// child tries again for up to 2 s while the removal fails (a writer that was just killed may
/// still add a file). With `detach` the child leaves this process's session and process group
/// (setsid), so a launcher that kills the rank's group while it aborts does not stop the removal.
/// True when the removal finished (and succeeded) in time.
bool remove_all_bounded(const std::string& path, double seconds, bool detach = false);

/// The owner file of a ScratchDir: "<dir>/.cb-owner".
inline constexpr const char* kScratchOwnerFile = ".cb-owner";

/// The inode number of this process's pid namespace (/proc/self/ns/pid), "" when unreadable.
std::string scratch_pid_namespace();

/// The owner line this process writes: "pid=P host=H start=S pidns=N" (S: the process's start
/// time, field 22 of /proc/P/stat, so that a reused pid is not taken for the owner; N: its pid
/// namespace, so that a run in a container with the host's name is never taken for gone).
std::string scratch_owner_line();

/// Whether the owner named by `line` (scratch_owner_line's format) is gone: its host is `host`,
/// its pid namespace (when the line names one) is this process's, and no process `pid` with that
/// start time runs here. False for another host's owner (its
/// pid means nothing here) and for a line that does not parse.
bool scratch_owner_gone(const std::string& line, const std::string& host);

/// This host's name (gethostname), as the owner lines record it.
std::string scratch_host();

/// Removes what runs that died (SIGKILL, power loss) left in `parent`: every directory
/// "cb-*" (not a symlink) whose owner file names a process of this host that is gone
/// (scratch_owner_gone). A directory without an owner file, or whose owner lives or is on another
/// host, is never touched. Returns the removed directories.
std::vector<std::string> sweep_dead_scratch(const std::string& parent,
                                            const std::string& host = scratch_host());

/// A directory this process created below `parent` (mkdtemp "cb-<tag>-XXXXXX"), removed with
/// everything in it when destroyed: on success and on failure alike. It holds an owner file
/// (kScratchOwnerFile, scratch_owner_line) and, before it is made, `parent` is swept of what dead
/// runs left (sweep_dead_scratch; each removal named on stderr). Throws CallError when the
/// directory cannot be created. The removal runs in a child process (remove_all_bounded: 120 s when
/// destroyed, 5 s when the run aborts), and a guard process (start_scratch_guard) removes it when
/// this process dies first: killed, or ended by another rank's MPI_Abort before its own cleanup.
class ScratchDir {
 public:
  ScratchDir(const std::string& parent, const std::string& tag);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::unique_ptr<AbortCleanup> remove_on_abort_;  // the run may end without destructors
  int guard_fd_ = -1;                              // start_scratch_guard's pipe
};

/// Starts a guard for `path`: a child in a session of its own, holding no descriptor of this
/// process, that waits on a pipe. release_scratch_guard(fd) ends it without touching `path`; when
/// the pipe closes without that (this process died: kill -9, or a launcher ending the job), it
/// removes `path`, trying again for up to 30 s while a dying writer still adds files. Returns the
/// pipe's write end (close-on-exec), or -1 when no guard could start.
int start_scratch_guard(const std::string& path);

/// Ends the guard of start_scratch_guard (fd < 0: nothing to do).
void release_scratch_guard(int fd);

/// Filesystem or partition-table signature in the first bytes of a block device (blkid's magics:
/// MBR 0x55AA at 510, GPT "EFI PART" at 512, ext2/3/4 0xEF53 at 1080, XFS "XFSB" at 0, btrfs
/// "_BHRfS_M" at 65600, swap "SWAPSPACE2" at 4086, LUKS at 0, LVM2 "LABELONE" at 512).
/// `head` holds the device's first bytes (at least 68 KiB to see btrfs). Empty when none.
std::string block_signature(const std::string& head);

/// Why a raw block device may not be a destructive fio target, or "" when it may:
/// `allowed` false (--set io.fio.allow_destructive_device=true is needed), not a block device,
/// mounted (it or a partition is a mount source), has partitions (sysfs `holders`/partitions
/// below /sys/class/block/NAME), or holds a signature (block_signature).
std::string raw_device_refusal(const std::string& device, bool allowed,
                               const std::vector<Mount>& mounts, const std::string& fs_root = "/");

/// Why `path` may not be handed to fio as a file or directory name (`what` names where it came
/// from), or "" when it may: fio splits filename= and directory= on ':' (so "victim.dat:x" is
/// two files), expands '$' in job files, starts comments at ';' and '#', escapes with '\\', and
/// strips surrounding blanks; a control character would start a job-file line of its own.
std::string fio_path_refusal(const std::string& path, const std::string& what);

/// A file or directory a fio job file names: `key` is filename, directory, filename_format,
/// opendir or include (fio's include directive), `value` as written, `line` 1-based.
struct JobFileTarget {
  std::string key, value;
  int line = 0;
};

/// The JobFileTargets of a fio job file's text (blanks around '=' allowed; ';' and '#' lines
/// are comments).
std::vector<JobFileTarget> job_file_targets(const std::string& text);

/// A process holding a file open for writing.
struct OpenWriter {
  int pid = 0;
  std::string comm;  ///< /proc/PID/comm
  std::string path;  ///< the file, as /proc/PID/fd/N links to it
};

/// Processes other than this one and its children (its records writer) that hold `target` or a
/// file below it open for writing
/// (O_WRONLY or O_RDWR): every `proc_root`/PID/fd/N whose link points there, with the access mode
/// from the "flags:" line (octal) of `proc_root`/PID/fdinfo/N (proc(5)). `target` is compared by
/// its absolute, normalised path. A process whose fd directory cannot be read (another user's,
/// without privilege) is counted in `unreadable` and skipped. A file inside another host's
/// ScratchDir below `target` ("cb-*" whose owner file names a host other than scratch_host():
/// another node's rank measuring the same shared tier, where nodes share one kernel) is not
/// counted: the tier is measured from every node at once. Another run of this host is counted.
std::vector<OpenWriter> open_writers(const std::string& target, int* unreadable = nullptr,
                                     const std::string& proc_root = "/proc");

/// "pid 4242 (python3) writes /scratch/job/ckpt.bin" lines, joined with "; " (at most 5, then
/// "and N more").
std::string describe_writers(const std::vector<OpenWriter>& writers);

}  // namespace clusterbench::io
