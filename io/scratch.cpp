// Scratch directory selection and safety checks: see scratch.hpp and docs/fio.md "Safety".
#include "io/scratch.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace fs = std::filesystem;

namespace clusterbench::io {

namespace {

std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

}  // namespace

std::vector<Mount> parse_mountinfo(const std::string& text) {
  std::vector<Mount> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    // id parent major:minor root mount_point options [optional...] - fstype source super_options
    std::istringstream ls(line);
    std::vector<std::string> f;
    std::string w;
    while (ls >> w) f.push_back(w);
    auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 6 || dash == f.end() || std::distance(dash, f.end()) < 3) continue;
    Mount m;
    m.mount_point = unescape(f[4]);
    m.options = f[5];
    m.fs_type = *(dash + 1);
    m.source = unescape(*(dash + 2));
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<Mount> read_mountinfo(const std::string& fs_root) {
  std::string root = fs_root == "/" ? "" : fs_root;
  std::ifstream in(root + "/proc/self/mountinfo");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_mountinfo(ss.str());
}

const Mount* mount_of(const std::string& path, const std::vector<Mount>& mounts) {
  std::error_code ec;
  std::string p = fs::weakly_canonical(path, ec).string();
  if (ec) p = path;
  const Mount* best = nullptr;
  for (const auto& m : mounts) {
    const std::string& mp = m.mount_point;
    bool under =
        p == mp || mp == "/" || (starts_with(p, mp) && p.size() > mp.size() && p[mp.size()] == '/');
    // Later lines shadow earlier ones at the same mount point (over-mounts).
    if (under && (!best || mp.size() >= best->mount_point.size())) best = &m;
  }
  return best;
}

bool is_network_fs(const std::string& t) {
  static const char* kNetwork[] = {
      "nfs",       "nfs4",         "cifs",           "smb3",      "smbfs",
      "ceph",      "lustre",       "gpfs",           "beegfs",    "glusterfs",
      "9p",        "afs",          "ocfs2",          "gfs2",      "orangefs",
      "pvfs2",     "fuse.sshfs",   "fuse.glusterfs", "fuse.s3fs", "fuse.juicefs",
      "fuse.ceph", "fuse.gcsfuse", "fuse.rclone",    "wekafs",    "panfs"};
  for (const char* n : kNetwork)
    if (t == n) return true;
  return false;
}

std::string system_tmpdir() {
  const char* t = std::getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

long long free_bytes(const std::string& dir) {
  struct statvfs s {};
  if (statvfs(dir.c_str(), &s) != 0) return -1;
  return static_cast<long long>(s.f_bavail) * static_cast<long long>(s.f_frsize);
}

ScratchChoice default_scratch(const std::vector<BlockDevice>& devices,
                              const std::vector<Mount>& mounts, const std::string& tmpdir,
                              const std::function<long long(const std::string&)>& free) {
  const Mount* best = nullptr;
  long long best_free = -1;
  for (const auto& m : mounts) {
    if (is_network_fs(m.fs_type) || !starts_with(m.source, "/dev/")) continue;
    if (m.options == "ro" || starts_with(m.options, "ro,")) continue;
    std::string dev = m.source.substr(5);
    bool nvme = false;
    for (const auto& d : devices) {
      if (!d.nvme || !starts_with(dev, d.name)) continue;
      std::string rest = dev.substr(d.name.size());  // "" or "p2"
      if (rest.empty() || (rest[0] == 'p' && rest.size() > 1)) nvme = true;
    }
    if (!nvme) continue;
    long long f = free(m.mount_point);
    if (f > best_free) best = &m, best_free = f;
  }
  if (best)
    return {best->mount_point, "local NVMe " + best->source + " (" + best->fs_type +
                                   ") with the most free space of the NVMe mounts"};
  return {tmpdir, "no writable local NVMe mount found; the system temporary directory"};
}

ScratchDir::ScratchDir(const std::string& parent, const std::string& tag) {
  std::string tmpl = parent + "/cb-" + tag + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) {
    int e = errno;
    throw_call_error("libc", std::to_string(e), std::strerror(e), "mkdtemp", __FILE__, __LINE__);
  }
  path_ = buf.data();
  remove_on_abort_ = std::make_unique<AbortCleanup>([p = path_] {
    std::error_code ec;
    fs::remove_all(p, ec);
  });
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string block_signature(const std::string& h) {
  auto at = [&](size_t off, const std::string& magic) {
    return h.size() >= off + magic.size() && h.compare(off, magic.size(), magic) == 0;
  };
  if (at(0, "XFSB")) return "xfs";
  if (at(0, std::string("LUKS\xba\xbe", 6))) return "crypto_LUKS";
  if (at(65600, "_BHRfS_M")) return "btrfs";
  if (at(1080, std::string("\x53\xef", 2))) return "ext2/3/4";
  if (at(4086, "SWAPSPACE2") || at(4086, "SWAP-SPACE")) return "swap";
  if (at(512, "LABELONE")) return "LVM2_member";
  if (at(512, "EFI PART")) return "GPT partition table";
  if (at(510, std::string("\x55\xaa", 2))) return "MBR partition table";
  return "";
}

std::string raw_device_refusal(const std::string& device, bool allowed,
                               const std::vector<Mount>& mounts, const std::string& fs_root) {
  if (!allowed)
    return "refused: " + device +
           " is a raw block device; writing it destroys its contents. Pass --set "
           "io.fio.allow_destructive_device=true to allow an empty device";
  struct stat st {};
  if (stat(device.c_str(), &st) != 0 || !S_ISBLK(st.st_mode))
    return "refused: " + device + " is not a block device";
  std::string name = fs::path(device).filename().string();
  for (const auto& m : mounts)
    if (m.source == device || starts_with(m.source, device))
      return "refused: " + device + " is mounted (" + m.source + " on " + m.mount_point + ")";
  std::string root = fs_root == "/" ? "" : fs_root;
  std::string sys = root + "/sys/class/block/" + name;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(sys, ec))
    if (fs::exists(e.path() / "partition"))
      return "refused: " + device + " has partition " + e.path().filename().string();
  for (const auto& e : fs::directory_iterator(sys + "/holders", ec))
    return "refused: " + device + " is held by " + e.path().filename().string();
  int fd = ::open(device.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "refused: cannot open " + device + ": " + std::strerror(errno);
  std::string head(68 * 1024, '\0');
  ssize_t n = ::pread(fd, head.data(), head.size(), 0);
  ::close(fd);
  if (n < 0) return "refused: cannot read " + device + ": " + std::strerror(errno);
  head.resize(static_cast<size_t>(n));
  std::string sig = block_signature(head);
  if (!sig.empty()) return "refused: " + device + " holds a " + sig + " signature";
  return "";
}

std::vector<OpenWriter> open_writers(const std::string& target, int* unreadable,
                                     const std::string& proc_root) {
  std::vector<OpenWriter> out;
  if (unreadable) *unreadable = 0;
  std::error_code ec;
  const std::string want = fs::absolute(target, ec).lexically_normal().string();
  std::string under = want;
  if (under.empty() || under.back() != '/') under += '/';
  const int self = static_cast<int>(::getpid());
  for (const auto& entry : fs::directory_iterator(proc_root, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    const int pid = std::atoi(name.c_str());
    if (pid == self) continue;
    std::error_code fd_ec;
    fs::directory_iterator fds(entry.path() / "fd", fd_ec);
    if (fd_ec) {
      if (unreadable && fd_ec != std::errc::no_such_file_or_directory) ++*unreadable;
      continue;
    }
    for (const auto& fd : fds) {
      std::error_code link_ec;
      std::string path = fs::read_symlink(fd.path(), link_ec).string();
      if (link_ec || path.empty() || path[0] != '/') continue;  // pipes, sockets, anon inodes
      if (path != want && !starts_with(path, under)) continue;
      std::ifstream info(entry.path() / "fdinfo" / fd.path().filename());
      std::string line;
      long flags = -1;
      while (std::getline(info, line))
        if (starts_with(line, "flags:")) flags = std::strtol(line.c_str() + 6, nullptr, 8);
      if (flags < 0 || ((flags & O_ACCMODE) != O_WRONLY && (flags & O_ACCMODE) != O_RDWR))
        continue;
      OpenWriter w;
      w.pid = pid;
      w.path = path;
      std::ifstream comm(entry.path() / "comm");
      std::getline(comm, w.comm);
      out.push_back(std::move(w));
    }
  }
  std::sort(out.begin(), out.end(), [](const OpenWriter& a, const OpenWriter& b) {
    return a.pid != b.pid ? a.pid < b.pid : a.path < b.path;
  });
  return out;
}

std::string describe_writers(const std::vector<OpenWriter>& writers) {
  std::string out;
  for (size_t i = 0; i < writers.size() && i < 5; ++i)
    out += (i ? "; " : "") + std::string("pid ") + std::to_string(writers[i].pid) + " (" +
           writers[i].comm + ") writes " + writers[i].path;
  if (writers.size() > 5) out += "; and " + std::to_string(writers.size() - 5) + " more";
  return out;
}

}  // namespace clusterbench::io
