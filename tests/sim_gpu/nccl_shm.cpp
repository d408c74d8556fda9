// The communicator's directory and shared state (nccl_impl.hpp).
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <list>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "nccl_impl.hpp"
#include "node.hpp"

namespace cbsim {

namespace {

constexpr std::uint32_t kMagic = 0x6e63636cU;  // "nccl"
constexpr const char* kPrefix = "cbsim-nccl-";

/// /dev/shm where it can be written, else $TMPDIR, else /tmp.
std::string base_dir() {
  if (access("/dev/shm", W_OK) == 0) return "/dev/shm";
  const char* t = std::getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

void* map_file(const std::string& path, size_t size, bool create) {
  int fd = open(path.c_str(), O_RDWR | (create ? O_CREAT : 0), 0600);
  if (fd < 0) return nullptr;
  struct stat sb {};
  if (fstat(fd, &sb) == 0 && static_cast<size_t>(sb.st_size) < size &&
      ftruncate(fd, static_cast<off_t>(size)) != 0) {
    close(fd);
    return nullptr;
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  return p == MAP_FAILED ? nullptr : p;
}

/// Writes a file atomically (a temporary file renamed).
bool write_file(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return false;
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  std::fclose(f);
  return ok && std::rename(tmp.c_str(), path.c_str()) == 0;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void remove_tree(const std::string& dir) {
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, ".."))
        unlink((dir + "/" + e->d_name).c_str());
    closedir(d);
  }
  rmdir(dir.c_str());
}

std::string host_name() {
  char h[256] = {0};
  gethostname(h, sizeof h - 1);
  return h;
}

/// Payloads read from peers, by "rank:id", most recent first.
std::list<std::pair<std::string, Segs>>& payload_cache() {
  static std::list<std::pair<std::string, Segs>> c;
  return c;
}

}  // namespace

std::string nccl_new_dir(std::string& why) {
  std::random_device rd;
  char name[64];
  std::snprintf(name, sizeof name, "%s%08x%08x", kPrefix, rd(), rd());
  const std::string dir = base_dir() + "/" + name;
  if (mkdir(dir.c_str(), 0700) != 0) {
    why = "mkdir " + dir + ": " + std::strerror(errno);
    return "";
  }
  auto* s = static_cast<Shared*>(map_file(dir + "/state", sizeof(Shared), true));
  if (!s) {
    why = "cannot map " + dir + "/state";
    return "";
  }
  s->h.magic = kMagic;
  munmap(s, sizeof(Shared));
  write_file(dir + "/owner", std::to_string(getpid()) + "\n");
  return dir;
}

Shared* nccl_map_state(const std::string& dir) {
  auto* s = static_cast<Shared*>(map_file(dir + "/state", sizeof(Shared), false));
  if (s && s->h.magic != kMagic) {
    munmap(s, sizeof(Shared));
    return nullptr;
  }
  return s;
}

bool nccl_join(ncclComm& c) {
  const Gpu& g = node().gpus[static_cast<size_t>(c.device)];
  nlohmann::json j = {{"host", host_name()},
                      {"pid", getpid()},
                      {"device", c.device},
                      {"bus_id", g.bus_id},
                      {"hopper", g.major >= 9},
                      {"nvlink", g.nvlink_links > 0 ? double(g.nvlink_up) / g.nvlink_links : 0.0},
                      {"ib", node().ib_ports_active / 8.0}};
  if (!write_file(c.dir + "/join-" + std::to_string(c.rank), j.dump())) return false;
  c.shm->slots[c.rank].joined.store(1, std::memory_order_release);
  return true;
}

bool nccl_all_joined(ncclComm& c) {
  for (int r = 0; r < c.nranks; ++r)
    if (!c.shm->slots[r].joined.load(std::memory_order_acquire)) return false;
  CommInfo& i = c.info;
  i.hosts.clear(), i.devices.clear();
  bool hopper = true;
  for (int r = 0; r < c.nranks; ++r) {
    auto j = nlohmann::json::parse(read_file(c.dir + "/join-" + std::to_string(r)));
    i.hosts.push_back(j.at("host"));
    i.devices.push_back(j.at("device"));
    hopper = hopper && j.value("hopper", false);
    i.nvlink = std::min(i.nvlink, j.value("nvlink", 1.0));
    i.ib = std::min(i.ib, j.value("ib", 1.0));
    i.same_node = i.same_node && i.hosts.back() == i.hosts.front();
  }
  const bool no_p2p = nccl_env("NCCL_P2P_DISABLE") == "1" && nccl_env("NCCL_SHM_DISABLE") == "1";
  i.network = !i.same_node || no_p2p;
  std::string algo = std::getenv("NCCL_ALGO") ? std::getenv("NCCL_ALGO") : "";
  for (char& ch : algo) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  i.ring_only = algo == "ring";
  i.nvls = hopper && !i.network && c.nranks >= 2;
  return true;
}

Channel* nccl_channel(ncclComm& c, int from, int to) {
  auto& m = from == c.rank ? c.tx : c.rx;
  const int peer = from == c.rank ? to : from;
  auto it = m.find(peer);
  if (it != m.end()) return it->second;
  const std::string path = c.dir + "/pair-" + std::to_string(from) + "-" + std::to_string(to);
  auto* ch = static_cast<Channel*>(map_file(path, sizeof(Channel), true));
  m[peer] = ch;
  return ch;
}

void nccl_put_payload(ncclComm& c, const std::string& bytes, PayloadRef& ref) {
  ref.id = c.next_payload++;
  ref.inline_len = 0;
  if (bytes.size() <= kInline) {
    ref.inline_len = static_cast<std::uint32_t>(bytes.size());
    std::memcpy(ref.inline_data, bytes.data(), bytes.size());
    return;
  }
  write_file(c.dir + "/pay-" + std::to_string(c.rank) + "-" + std::to_string(ref.id), bytes);
}

Segs nccl_get_payload(ncclComm& c, int rank, const PayloadRef& ref) {
  auto& cache = payload_cache();
  const std::string key = c.dir + ":" + std::to_string(rank) + ":" + std::to_string(ref.id);
  for (auto it = cache.begin(); it != cache.end(); ++it)
    if (it->first == key) return it->second;
  Segs s =
      ref.inline_len || ref.id == 0
          ? deserialize(std::string(reinterpret_cast<const char*>(ref.inline_data), ref.inline_len))
          : deserialize(
                read_file(c.dir + "/pay-" + std::to_string(rank) + "-" + std::to_string(ref.id)));
  cache.emplace_front(key, s);
  if (cache.size() > 32) cache.pop_back();
  return s;
}

void nccl_collect_payloads(ncclComm& c) {
  std::uint64_t done = ~0ULL;
  for (int r = 0; r < c.nranks; ++r)
    done = std::min<std::uint64_t>(done, c.shm->slots[r].completed.load(std::memory_order_acquire));
  for (auto it = c.payload_last_use.begin(); it != c.payload_last_use.end();) {
    if (it->second < done && it->first != c.last_payload) {
      unlink((c.dir + "/pay-" + std::to_string(c.rank) + "-" + std::to_string(it->first)).c_str());
      it = c.payload_last_use.erase(it);
    } else {
      ++it;
    }
  }
}

void nccl_leave(ncclComm& c) {
  if (!c.shm) return;
  for (auto& [id, seq] : c.payload_last_use)
    unlink((c.dir + "/pay-" + std::to_string(c.rank) + "-" + std::to_string(id)).c_str());
  c.payload_last_use.clear();
  bool last = false;
  if (!c.shm->slots[c.rank].destroyed.exchange(1))
    last = c.shm->h.destroyed.fetch_add(1) + 1 == static_cast<std::uint32_t>(c.nranks);
  for (auto* m : {&c.tx, &c.rx})
    for (auto& [peer, ch] : *m) munmap(ch, sizeof(Channel));
  c.tx.clear(), c.rx.clear();
  munmap(c.shm, sizeof(Shared));
  c.shm = nullptr;
  if (last) remove_tree(c.dir);
}

void nccl_sweep_stale() {
  const std::string base = base_dir();
  DIR* d = opendir(base.c_str());
  if (!d) return;
  const std::time_t now = std::time(nullptr);
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, kPrefix, std::strlen(kPrefix)) != 0) continue;
    const std::string dir = base + "/" + e->d_name;
    struct stat sb {};
    if (stat(dir.c_str(), &sb) != 0 || now - sb.st_mtime < 60) continue;
    const long owner = std::atol(read_file(dir + "/owner").c_str());
    const bool gone = owner <= 0 || (kill(static_cast<pid_t>(owner), 0) != 0 && errno == ESRCH);
    if (gone || now - sb.st_mtime > 24 * 3600) remove_tree(dir);
  }
  closedir(d);
}

}  // namespace cbsim
