// The scratch device: which disks hold a path (mounts, block devices, dm/md slaves), what they are
// (NVMe or not, transport, model), and how much of a disk's traffic a case moved itself (see
// scratch.hpp and docs/fio.md "Scratch"). Read below a filesystem root with env/sysfs.hpp.
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "env/sysfs.hpp"
#include "io/scratch.hpp"

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

using sysfs::under;

/// A sysfs attribute without its surrounding whitespace (NVMe pads model and serial); "" when
/// it cannot be read.
std::string attribute(const fs::path& file) { return sysfs::read_or_empty(file.string()); }

/// The resolved target of a sysfs link; empty when it does not resolve.
fs::path resolved(const fs::path& link) { return sysfs::resolved(link.string()); }

/// lsblk's reading of a SCSI device path (`sysfs` relative to /sys/devices): how it is attached.
std::string scsi_transport(const std::string& sysfs) {
  if (sysfs.find("/usb") != std::string::npos) return "usb";
  if (sysfs.find("/ata") != std::string::npos) return "sata";
  if (sysfs.find("/end_device-") != std::string::npos) return "sas";
  if (sysfs.find("/session") != std::string::npos) return "iscsi";
  return "scsi";
}

/// An NVMe controller's transport; a multipath head's device is its subsystem, whose
/// controllers (nvme0, nvme1 links inside it) carry the transport.
std::string nvme_transport(const fs::path& device) {
  std::string t = attribute(device / "transport");
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(device, ec)) {
    if (!t.empty()) break;
    const std::string n = e.path().filename().string();
    if (n.size() > 4 && starts_with(n, "nvme") && std::isdigit(static_cast<unsigned char>(n[4])))
      t = attribute(e.path() / "transport");
  }
  return t;
}

/// What sysfs says of the whole disk at `dir` (a resolved /sys/devices/.../block/NAME).
Disk read_disk(const fs::path& dir) {
  Disk d;
  d.name = dir.filename().string();
  fs::path device = resolved(dir / "device");
  if (device.empty()) {  // a virtual device (loop, zram) has no `device`
    d.rotational = sysfs::disk_identity(dir.string(), false).rotational;
    return d;
  }
  d.subsystem = resolved(device / "subsystem").filename().string();
  d.nvme = d.subsystem == "nvme" || d.subsystem == "nvme-subsystem";
  const sysfs::DiskIdentity id = sysfs::disk_identity(dir.string(), d.nvme);
  d.model = id.model, d.serial = id.serial, d.firmware = id.firmware, d.rotational = id.rotational;
  // The path below /sys/devices only: a fixture root's own path is not the device's.
  const std::string path = device.string();
  const size_t below = path.rfind("/sys/devices/");
  d.transport = d.nvme ? nvme_transport(device)
                : d.subsystem == "scsi"
                    ? scsi_transport(below == std::string::npos ? path : path.substr(below + 12))
                    : d.subsystem;
  return d;
}

/// Adds the disks below the block device at `dir` (a disk, a partition, or a dm/md device
/// whose `slaves` are followed), each once.
void collect_disks(const fs::path& dir, int depth, std::vector<Disk>& out) {
  std::error_code ec;
  fs::path d = fs::exists(dir / "partition", ec) ? dir.parent_path() : dir;
  std::vector<fs::path> slaves;
  for (const auto& e : fs::directory_iterator(d / "slaves", ec)) slaves.push_back(e.path());
  std::sort(slaves.begin(), slaves.end());
  if (!slaves.empty() && depth < 8) {
    for (const auto& s : slaves)
      if (fs::path r = resolved(s); !r.empty()) collect_disks(r, depth + 1, out);
    return;
  }
  Disk disk = read_disk(d);
  for (const auto& x : out)
    if (x.name == disk.name) return;
  out.push_back(std::move(disk));
}

/// The kernel name a /dev path stands for, following its symlinks below `fs_root`
/// (/dev/disk/by-uuid/X -> ../../nvme0n1p1, /dev/mapper/vg-lv -> ../dm-0).
std::string dev_name(const std::string& source, const std::string& fs_root) {
  fs::path p = source;
  for (int i = 0; i < 16; ++i) {
    std::error_code ec;
    fs::path target = fs::read_symlink(under(fs_root, p.string()), ec);
    if (ec) break;
    p = (target.is_absolute() ? target : p.parent_path() / target).lexically_normal();
  }
  return p.filename().string();
}

/// Distinct non-empty values of one field over the disks, joined with "+"; null when none.
json joined(const std::vector<Disk>& disks, std::string Disk::*field, bool distinct) {
  std::vector<std::string> seen;
  for (const auto& d : disks) {
    const std::string& v = d.*field;
    if (v.empty() || (distinct && std::find(seen.begin(), seen.end(), v) != seen.end())) continue;
    seen.push_back(v);
  }
  if (seen.empty()) return nullptr;
  std::string out;
  for (const auto& v : seen) out += (out.empty() ? "" : "+") + v;
  return out;
}

json text_or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

json disk_json(const Disk& d) {
  return {{"name", d.name},
          {"model", text_or_null(d.model)},
          {"serial", text_or_null(d.serial)},
          {"firmware", text_or_null(d.firmware)},
          {"subsystem", text_or_null(d.subsystem)},
          {"transport", text_or_null(d.transport)},
          {"nvme", d.nvme},
          {"rotational", d.rotational ? json(*d.rotational) : json(nullptr)}};
}

/// "nvme0n1 (NVMe pcie, non-rotational, model M, serial S)".
std::string disk_summary(const Disk& d) {
  std::string kind = d.nvme ? "NVMe " + (d.transport.empty() ? "transport unknown" : d.transport)
                     : d.transport.empty() ? "virtual"
                                           : d.transport;
  std::string rot = !d.rotational   ? "rotational unknown"
                    : *d.rotational ? "rotational"
                                    : "non-rotational";
  return d.name + " (" + kind + ", " + rot + ", model " + (d.model.empty() ? "unknown" : d.model) +
         ", serial " + (d.serial.empty() ? "unknown" : d.serial) + ")";
}

}  // namespace

std::vector<Disk> disks_of(const std::string& dev, const std::string& fs_root,
                           std::string* block_device, std::string* why) {
  std::vector<Disk> out;
  fs::path dir = resolved(under(fs_root, "/sys/dev/block/" + dev));
  if (dir.empty()) {
    if (why) *why = "no block device " + dev + " in /sys/dev/block";
    return out;
  }
  if (block_device) *block_device = dir.filename().string();
  collect_disks(dir, 0, out);
  return out;
}

bool ScratchDevice::local_nvme() const {
  return !disks.empty() && std::all_of(disks.begin(), disks.end(), [](const Disk& d) {
    return d.nvme && d.transport == "pcie";
  });
}

std::string ScratchDevice::summary() const {
  std::string out;
  for (const auto& d : disks) out += (out.empty() ? "" : " + ") + disk_summary(d);
  if (disks.empty()) out = "no block device (" + reason + ")";
  if (mount_point.empty()) return out + ", raw device " + path;
  out += ", " + fs_type + " on " + mount_point;
  if (!block_device.empty() && (disks.size() != 1 || disks[0].name != block_device))
    out += " via " + block_device;
  return out;
}

ScratchDevice scratch_device(const std::string& path, const std::vector<Mount>& mounts,
                             const std::string& fs_root) {
  ScratchDevice d;
  d.path = path;
  const Mount* m = mount_of(path, mounts);
  if (!m) {
    d.reason = "no mount holds " + path;
    return d;
  }
  d.mount_point = m->mount_point, d.fs_type = m->fs_type, d.source = m->source, d.dev = m->dev;
  std::string why;
  if (!starts_with(m->dev, "0:")) d.disks = disks_of(m->dev, fs_root, &d.block_device, &why);
  if (d.disks.empty() && starts_with(m->source, "/dev/")) {
    // btrfs and others report an anonymous device number: the source names the device.
    std::string name = dev_name(m->source, fs_root);
    fs::path dir = resolved(under(fs_root, "/sys/class/block/" + name));
    if (!dir.empty()) {
      d.block_device = name;
      collect_disks(dir, 0, d.disks);
    } else {
      why = m->source + " is not in /sys/class/block (" + name + ")";
    }
  }
  if (d.disks.empty())
    d.reason = !why.empty() ? why : m->fs_type + " " + m->source + " is not on a block device";
  return d;
}

json scratch_device_json(const ScratchDevice& d) {
  json disks = json::array();
  for (const auto& x : d.disks) disks.push_back(disk_json(x));
  bool known = !d.disks.empty();
  bool all_nvme =
      known && std::all_of(d.disks.begin(), d.disks.end(), [](const Disk& x) { return x.nvme; });
  // Rotational when any disk spins; not when every disk says so; else unknown.
  json rotational = nullptr;
  if (std::any_of(d.disks.begin(), d.disks.end(),
                  [](const Disk& x) { return x.rotational.value_or(false); }))
    rotational = true;
  else if (known && std::all_of(d.disks.begin(), d.disks.end(),
                                [](const Disk& x) { return x.rotational.has_value(); }))
    rotational = false;
  json j = {{"path", d.path},
            {"mount_point", text_or_null(d.mount_point)},
            {"fs_type", text_or_null(d.fs_type)},
            {"source", text_or_null(d.source)},
            {"dev", text_or_null(d.dev)},
            {"block_device", text_or_null(d.block_device)},
            {"disk", joined(d.disks, &Disk::name, false)},
            {"model", joined(d.disks, &Disk::model, true)},
            {"serial", joined(d.disks, &Disk::serial, false)},
            {"firmware", joined(d.disks, &Disk::firmware, true)},
            {"transport", joined(d.disks, &Disk::transport, true)},
            {"nvme", known ? json(all_nvme) : json(nullptr)},
            {"rotational", rotational},
            {"local_nvme", d.local_nvme()},
            {"disks", disks},
            {"summary", d.summary()}};
  if (!d.reason.empty()) j["reason"] = d.reason;
  return j;
}

json scratch_device_evidence(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISBLK(st.st_mode)) {
    ScratchDevice d;
    d.path = path;
    d.dev = std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev));
    d.disks = disks_of(d.dev, "/", &d.block_device, &d.reason);
    return scratch_device_json(d);
  }
  return scratch_device_json(scratch_device(path, read_mountinfo()));
}

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
    m.dev = f[2];
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

long long free_bytes(const std::string& dir) {
  struct statvfs s {};
  if (statvfs(dir.c_str(), &s) != 0) return -1;
  return static_cast<long long>(s.f_bavail) * static_cast<long long>(s.f_frsize);
}

long long diskstats_bytes(const std::string& diskstats_text, const std::string& name) {
  std::istringstream in(diskstats_text);
  std::string line;
  while (std::getline(in, line)) {
    // major minor name reads merged sectors_read ms writes merged sectors_written ...
    std::istringstream ls(line);
    std::string major, minor, dev;
    unsigned long long f[7] = {};
    if (!(ls >> major >> minor >> dev) || dev != name) continue;
    for (auto& x : f)
      if (!(ls >> x)) return -1;
    return static_cast<long long>((f[2] + f[6]) * 512ULL);
  }
  return -1;
}

long long children_io_bytes() {
  rusage ru{};
  if (::getrusage(RUSAGE_CHILDREN, &ru) != 0) return -1;
  return (static_cast<long long>(ru.ru_inblock) + static_cast<long long>(ru.ru_oublock)) * 512;
}

std::string load_disk(const json& device) {
  const json disks = device.value("disks", json::array());
  if (disks.is_array() && disks.size() == 1 && disks[0].is_object() &&
      disks[0].value("name", json()).is_string())
    return disks[0]["name"].get<std::string>();
  const json bd = device.value("block_device", json());
  return bd.is_string() ? bd.get<std::string>() : "";
}

ScratchChoice default_scratch(const std::vector<Mount>& mounts, const std::string& tmpdir,
                              const std::function<long long(const std::string&)>& free,
                              const std::string& fs_root) {
  const Mount* best = nullptr;
  ScratchDevice best_device;
  long long best_free = -1;
  for (const auto& m : mounts) {
    if (is_network_fs(m.fs_type)) continue;
    if (m.options == "ro" || starts_with(m.options, "ro,")) continue;
    // Resolved by the mount's own point, so that a mount below it is not taken for it.
    ScratchDevice d = scratch_device(m.mount_point, {m}, fs_root);
    if (!d.local_nvme()) continue;
    long long f = free(m.mount_point);
    if (f > best_free) best = &m, best_free = f, best_device = std::move(d);
  }
  if (best)
    return {best->mount_point, "local NVMe " + best_device.summary() +
                                   ": the most free space of the local NVMe mounts"};
  return {tmpdir, "no writable local NVMe mount found; the system temporary directory"};
}

ScratchChoice default_scratch(const std::vector<BlockDevice>& /*devices*/,
                              const std::vector<Mount>& mounts, const std::string& tmpdir,
                              const std::function<long long(const std::string&)>& free) {
  return default_scratch(mounts, tmpdir, free, "/");
}

}  // namespace clusterbench::io
