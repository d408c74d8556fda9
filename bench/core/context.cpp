// MPI context. Every MPI call of the core is here, behind CLUSTERBENCH_HAVE_MPI.
#include "core/api/context.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <thread>

#include "core/api/error.hpp"
#include "records/utf8.hpp"

#if CLUSTERBENCH_HAVE_MPI
#include "core/api/mpi_check.hpp"
#endif

namespace clusterbench {

namespace {
Context* g_ctx = nullptr;
bool g_finalized = false;
}  // namespace

std::string local_hostname() {
  // A host name is bytes: it goes into every record, so it is kept as valid UTF-8.
  if (const char* h = std::getenv("CLUSTERBENCH_HOSTNAME"); h && *h) return valid_utf8(h);
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return valid_utf8(buf);
}

std::vector<std::string> Context::hosts() const {
  std::vector<std::string> out;
  for (const auto& h : rank_hosts_)
    if (std::find(out.begin(), out.end(), h) == out.end()) out.push_back(h);
  return out;
}

Context& Context::init_local(const std::string& host) {
  if (g_ctx) return *g_ctx;
  auto* c = new Context();
  c->single_ = true;
  c->host_ = host;
  c->rank_hosts_ = {host};
  set_error_origin(host, 0);
  g_ctx = c;
  return *c;
}

Context& Context::get() {
  if (!g_ctx) throw std::logic_error("Context::get() before Context::init()");
  return *g_ctx;
}

#if CLUSTERBENCH_HAVE_MPI

namespace {
MPI_Comm& comm(void* p) { return *static_cast<MPI_Comm*>(p); }

// Waits for a request by polling with a short sleep: the waiting rank leaves the cores free.
void quiet_wait(MPI_Request& req) {
  int done = 0;
  auto sleep = std::chrono::microseconds(200);
  while (true) {
    CHECK_MPI(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
    if (done) return;
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::microseconds(20000));
  }
}
}  // namespace

Context& Context::init(int* argc, char*** argv, bool threads) {
  if (g_ctx) return *g_ctx;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    // SERIALIZED where a case calls MPI from a second thread while the main thread does not
    // (the burn-in's all_reduce thread, the training step's gradient thread); else SINGLE:
    // OpenMPI turns its locks on at every level above SINGLE (ompi_mpi_init: provided !=
    // MPI_THREAD_SINGLE), and a 1 KiB all_reduce then spends 13% of its time in
    // pthread_mutex_lock/unlock (perf, docs/collectives.md). The progress channel is TCP
    // (progress.hpp); the watchdog only writes files and MPI_Abort()s.
    CHECK_MPI(MPI_Init_thread(argc, argv, threads ? MPI_THREAD_SERIALIZED : MPI_THREAD_SINGLE,
                              &provided));
    (void)provided;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  auto* c = new Context();
  CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &c->world_rank_));
  CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &c->world_size_));
  c->host_ = local_hostname();
  set_error_origin(c->host_, c->world_rank_);
  g_ctx = c;
  c->rank_hosts_ = c->allgather(c->host_);

  // Node split: shared-memory communicator, refined by host name so that ranks which share a
  // kernel but present different host names (network namespaces) count as different nodes.
  std::map<std::string, int> host_index;
  for (const auto& h : c->rank_hosts_) host_index.emplace(h, static_cast<int>(host_index.size()));
  MPI_Comm shared;
  CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, c->world_rank_, MPI_INFO_NULL,
                                &shared));
  c->node_comm_ = new MPI_Comm;
  CHECK_MPI(MPI_Comm_split(shared, host_index[c->host_], c->world_rank_, &comm(c->node_comm_)));
  MPI_Comm_free(&shared);
  CHECK_MPI(MPI_Comm_rank(comm(c->node_comm_), &c->local_rank_));
  CHECK_MPI(MPI_Comm_size(comm(c->node_comm_), &c->local_size_));

  MPI_Comm leaders;
  CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, c->local_rank_ == 0 ? 0 : MPI_UNDEFINED, c->world_rank_,
                           &leaders));
  if (c->local_rank_ == 0) {
    c->leaders_comm_ = new MPI_Comm(leaders);
    CHECK_MPI(MPI_Comm_rank(leaders, &c->node_index_));
    CHECK_MPI(MPI_Comm_size(leaders, &c->node_count_));
  }
  int idx[2] = {c->node_index_, c->node_count_};
  CHECK_MPI(MPI_Bcast(idx, 2, MPI_INT, 0, comm(c->node_comm_)));
  c->node_index_ = idx[0];
  c->node_count_ = idx[1];
  return *c;
}

std::string Context::mpi_thread_level() {
  int initialized = 0, level = -1;
  MPI_Initialized(&initialized);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!initialized || finalized || MPI_Query_thread(&level) != MPI_SUCCESS) return "none";
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "single";
    case MPI_THREAD_FUNNELED:
      return "funneled";
    case MPI_THREAD_SERIALIZED:
      return "serialized";
    case MPI_THREAD_MULTIPLE:
      return "multiple";
  }
  return "unknown";
}

void Context::finalize() {
  if (g_finalized) return;
  g_finalized = true;
  if (g_ctx && g_ctx->single_) return;
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
}

namespace {
/// One value reduced over the world, waiting quietly: the world collectives of the run come
/// between cases, when a leader may still measure a node case while the other ranks wait.
template <class T>
T quiet_allreduce(T v, MPI_Datatype type, MPI_Op op) {
  T out{};
  MPI_Request req;
  CHECK_MPI(MPI_Iallreduce(&v, &out, 1, type, op, MPI_COMM_WORLD, &req));
  quiet_wait(req);
  return out;
}
}  // namespace

double Context::allreduce_max(double v) const {
  return single_ ? v : quiet_allreduce(v, MPI_DOUBLE, MPI_MAX);
}
double Context::allreduce_min(double v) const {
  return single_ ? v : quiet_allreduce(v, MPI_DOUBLE, MPI_MIN);
}
long long Context::allreduce_sum(long long v) const {
  return single_ ? v : quiet_allreduce(v, MPI_LONG_LONG, MPI_SUM);
}
void Context::allreduce_max(std::vector<double>& v, bool leaders_only) const {
  if (single_) return;
  if (leaders_only && !leaders_comm_) throw std::logic_error("leaders reduction on a non-leader");
  MPI_Comm c = leaders_only ? comm(leaders_comm_) : MPI_COMM_WORLD;
  CHECK_MPI(
      MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_MAX, c));
}
std::string Context::bcast(const std::string& s) const {
  if (single_) return s;
  long long n = static_cast<long long>(s.size());
  MPI_Request req;
  CHECK_MPI(MPI_Ibcast(&n, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD, &req));
  quiet_wait(req);
  std::string out = world_rank_ == 0 ? s : std::string(static_cast<size_t>(n), '\0');
  if (n > 0) {
    CHECK_MPI(MPI_Ibcast(out.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD, &req));
    quiet_wait(req);
  }
  return out;
}

namespace {
std::vector<std::string> split_gathered(const std::vector<int>& lens, const std::string& buf) {
  std::vector<std::string> out;
  size_t off = 0;
  for (int len : lens) {
    out.push_back(buf.substr(off, static_cast<size_t>(len)));
    off += static_cast<size_t>(len);
  }
  return out;
}
}  // namespace

std::vector<std::string> Context::gather(const std::string& s) const {
  if (single_) return {s};
  int len = static_cast<int>(s.size());
  std::vector<int> lens(world_rank_ == 0 ? world_size_ : 0);
  // The root waits quietly: while leaders measure a node-level case it must not spin.
  MPI_Request req;
  CHECK_MPI(MPI_Igather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD, &req));
  quiet_wait(req);
  std::vector<int> displs(lens.size(), 0);
  int total = 0;
  for (size_t i = 0; i < lens.size(); ++i) displs[i] = total, total += lens[i];
  std::string buf(static_cast<size_t>(total), '\0');
  CHECK_MPI(MPI_Igatherv(s.data(), len, MPI_CHAR, buf.data(), lens.data(), displs.data(), MPI_CHAR,
                         0, MPI_COMM_WORLD, &req));
  quiet_wait(req);
  if (world_rank_ != 0) return {};
  return split_gathered(lens, buf);
}

std::vector<std::string> Context::allgather(const std::string& s) const {
  if (single_) return {s};
  int len = static_cast<int>(s.size());
  std::vector<int> lens(world_size_);
  MPI_Request req;
  CHECK_MPI(MPI_Iallgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD, &req));
  quiet_wait(req);
  std::vector<int> displs(lens.size(), 0);
  int total = 0;
  for (size_t i = 0; i < lens.size(); ++i) displs[i] = total, total += lens[i];
  std::string buf(static_cast<size_t>(total), '\0');
  CHECK_MPI(MPI_Iallgatherv(s.data(), len, MPI_CHAR, buf.data(), lens.data(), displs.data(),
                            MPI_CHAR, MPI_COMM_WORLD, &req));
  quiet_wait(req);
  return split_gathered(lens, buf);
}

std::unique_ptr<Group> Context::split(bool member) const {
  std::unique_ptr<Group> g(new Group());
  g->member_ = member;
  g->single_ = single_;
  if (single_) return g;
  MPI_Comm c;
  CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED, world_rank_, &c));
  if (member) {
    g->comm_ = new MPI_Comm(c);
    CHECK_MPI(MPI_Comm_size(c, &g->size_));
  }
  return g;
}

Group::~Group() {
  if (comm_) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm(comm_));
    delete static_cast<MPI_Comm*>(comm_);
  }
}

void Group::allreduce_max(std::vector<double>& v) const {
  if (single_) return;
  if (!comm_) throw std::logic_error("Group::allreduce_max on a non-member");
  CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_DOUBLE, MPI_MAX,
                          comm(comm_)));
}

void Context::quiet_barrier() const {
  if (single_) return;
  MPI_Request req;
  CHECK_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &req));
  quiet_wait(req);
}

void Context::leaders_barrier() const {
  if (single_) return;
  if (!leaders_comm_) throw std::logic_error("leaders_barrier on a non-leader rank");
  MPI_Request req;
  CHECK_MPI(MPI_Ibarrier(comm(leaders_comm_), &req));
  quiet_wait(req);
}

std::string Context::mpi_version() const {
  if (single_) return "";
  char buf[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(buf, &len);
  std::string v(buf, static_cast<size_t>(len));
  auto comma = v.find(',');
  return comma == std::string::npos ? v : v.substr(0, comma);
}

void Context::abort(int code) const {
  if (single_) std::_Exit(code);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

#else  // single process

Context& Context::init(int*, char***, bool) {
  if (g_ctx) return *g_ctx;
  auto* c = new Context();
  c->host_ = local_hostname();
  c->rank_hosts_ = {c->host_};
  set_error_origin(c->host_, 0);
  g_ctx = c;
  return *c;
}
void Context::finalize() { g_finalized = true; }

std::string Context::mpi_thread_level() { return "none"; }
double Context::allreduce_max(double v) const { return v; }
double Context::allreduce_min(double v) const { return v; }
long long Context::allreduce_sum(long long v) const { return v; }
void Context::allreduce_max(std::vector<double>&, bool) const {}
std::string Context::bcast(const std::string& s) const { return s; }
std::vector<std::string> Context::gather(const std::string& s) const { return {s}; }
std::vector<std::string> Context::allgather(const std::string& s) const { return {s}; }
void Context::quiet_barrier() const {}
std::unique_ptr<Group> Context::split(bool member) const {
  std::unique_ptr<Group> g(new Group());
  g->member_ = member;
  return g;
}
Group::~Group() = default;
void Group::allreduce_max(std::vector<double>&) const {}
void Context::leaders_barrier() const {}
std::string Context::mpi_version() const { return ""; }
void Context::abort(int code) const { std::_Exit(code); }

#endif

}  // namespace clusterbench
