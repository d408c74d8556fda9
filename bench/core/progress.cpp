// Progress: see progress.hpp.
#include "core/progress.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#if CLUSTERBENCH_HAVE_MPI
#include "core/mpi_check.hpp"
#endif

namespace clusterbench {

namespace {
std::atomic<long long> g_case{-1}, g_started{0}, g_finished{0};
ProgressChannel* g_channel = nullptr;
}  // namespace

namespace progress {
void next_case() {
  g_started.store(0, std::memory_order_relaxed);
  g_finished.store(0, std::memory_order_relaxed);
  g_case.fetch_add(1, std::memory_order_relaxed);
}
void started(long long ops) { g_started.fetch_add(ops, std::memory_order_relaxed); }
void finished(long long ops) { g_finished.fetch_add(ops, std::memory_order_relaxed); }
RankProgress mine(int rank) {
  RankProgress p;
  p.rank = rank;
  p.case_index = g_case.load(std::memory_order_relaxed);
  p.started = g_started.load(std::memory_order_relaxed);
  p.finished = g_finished.load(std::memory_order_relaxed);
  return p;
}
}  // namespace progress

Unfinished describe_unfinished(const std::vector<RankProgress>& all,
                               const std::vector<std::string>& hosts) {
  Unfinished out;
  long long c = -1, k = 0;
  for (const auto& p : all)
    if (p.answered) c = std::max(c, p.case_index);
  for (const auto& p : all)
    if (p.answered && p.case_index == c) k = std::max(k, p.started);
  auto host_of = [&](int r) {
    return r >= 0 && r < static_cast<int>(hosts.size()) ? hosts[static_cast<size_t>(r)] : "?";
  };
  auto counts = [](const RankProgress& p) {
    return std::to_string(p.started) + " started, " + std::to_string(p.finished) + " finished";
  };
  std::string stopped, waiting;
  int n_stopped = 0, n_waiting = 0;
  for (const auto& p : all) {
    std::string state, why;
    if (!p.answered) {
      state = "silent";
      why = "no answer: process stopped or its node is down";
    } else if (p.case_index < c) {
      state = "behind";
      why = "still in an earlier case";
    } else if (p.started < k) {
      state = "behind";
      why = "never started operation " + std::to_string(k) + " of the case; " + counts(p);
    } else if (p.finished < k) {
      state = "waiting";
    } else {
      state = "finished";
    }
    json item = {{"rank", p.rank}, {"host", host_of(p.rank)}, {"state", state}};
    if (p.answered)
      item.update({{"case_index", p.case_index}, {"started", p.started}, {"finished", p.finished}});
    out.ranks.push_back(item);
    std::string who = "rank " + std::to_string(p.rank) + " on " + host_of(p.rank);
    if (state == "silent" || state == "behind") {
      stopped += std::string(n_stopped++ ? ", " : "") + who + " (" + why + ")";
    } else if (state == "waiting") {
      waiting += std::string(n_waiting++ ? ", " : "") + who;
    }
  }
  if (all.empty()) return out;
  if (n_stopped > 0) {
    out.text = "; did not finish: " + stopped;
    if (n_waiting > 0) out.text += "; waiting for it: " + waiting;
  } else if (n_waiting > 0) {
    out.text = "; did not finish: " + waiting + " (every one inside operation " +
               std::to_string(k) + " of the case, none behind: a link or the library hangs)";
  }
  return out;
}

#if CLUSTERBENCH_HAVE_MPI

namespace {
constexpr int kTagAsk = 1, kTagState = 2, kTagAbort = 3, kTagRootAbort = 4;
constexpr auto kPoll = std::chrono::milliseconds(50);
}  // namespace

struct ProgressChannel::Impl {
  const Context& ctx;
  std::function<void(const std::string&)> on_peer_abort;
  MPI_Comm comm = MPI_COMM_NULL;
  bool threaded = false;
  std::atomic<bool> stop{false};
  std::thread thread;
  std::mutex mu;  // collect() and post_abort() from any thread
  int asked = 0;
  bool peer_aborted = false;
  bool root_abort_posted = false;

  Impl(const Context& c, std::function<void(const std::string&)> f)
      : ctx(c), on_peer_abort(std::move(f)) {}

  // The thread: every rank answers "where are you?" (from rank 0, or from a rank whose deadline
  // passed and that asks whether rank 0 still runs); rank 0 also listens for a peer's abort.
  // Errors here must never end the run: a broken channel only loses the names.
  void loop() {
    while (!stop.load()) {
      std::this_thread::sleep_for(kPoll);
      if (ctx.is_root()) receive_abort();
      answer_asks();
    }
  }

  void receive_abort() {
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kTagAbort, comm, &flag, &st) != MPI_SUCCESS || !flag) return;
    int len = 0;
    MPI_Get_count(&st, MPI_CHAR, &len);
    std::string text(static_cast<size_t>(std::max(0, len)), '\0');
    if (MPI_Recv(text.data(), len, MPI_CHAR, st.MPI_SOURCE, kTagAbort, comm, MPI_STATUS_IGNORE) !=
            MPI_SUCCESS ||
        peer_aborted)
      return;
    peer_aborted = true;
    const auto& hosts = ctx.rank_hosts();
    std::string host = st.MPI_SOURCE < static_cast<int>(hosts.size())
                           ? hosts[static_cast<size_t>(st.MPI_SOURCE)]
                           : "?";
    on_peer_abort("rank " + std::to_string(st.MPI_SOURCE) + " on " + host + " aborted: " + text);
  }

  void answer_asks() {
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kTagAsk, comm, &flag, &st) != MPI_SUCCESS || !flag) return;
    int id = 0;
    if (MPI_Recv(&id, 1, MPI_INT, st.MPI_SOURCE, kTagAsk, comm, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return;
    RankProgress p = progress::mine(ctx.world_rank());
    long long msg[4] = {id, p.case_index, p.started, p.finished};
    MPI_Request req;  // the asker is listening, and may stop: never wait on it
    if (MPI_Isend(msg, 4, MPI_LONG_LONG, st.MPI_SOURCE, kTagState, comm, &req) == MPI_SUCCESS)
      MPI_Request_free(&req);
  }
};

ProgressChannel::ProgressChannel(const Context& ctx,
                                 std::function<void(const std::string&)> on_peer_abort)
    : impl_(std::make_unique<Impl>(ctx, std::move(on_peer_abort))) {
  g_channel = this;
  if (!ctx.uses_mpi()) return;  // one process without MPI calls: nothing to ask
  CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &impl_->comm));
  int level = 0;
  CHECK_MPI(MPI_Query_thread(&level));
  impl_->threaded = level == MPI_THREAD_MULTIPLE && ctx.world_size() > 1;
  if (impl_->threaded) impl_->thread = std::thread([this] { impl_->loop(); });
}

ProgressChannel::~ProgressChannel() {
  g_channel = nullptr;
  impl_->stop.store(true);
  if (impl_->thread.joinable()) impl_->thread.join();
  if (impl_->comm != MPI_COMM_NULL) MPI_Comm_free(&impl_->comm);
}

std::vector<RankProgress> ProgressChannel::collect(double seconds) {
  const Context& ctx = impl_->ctx;
  std::vector<RankProgress> all(static_cast<size_t>(ctx.world_size()));
  for (int r = 0; r < ctx.world_size(); ++r) {
    all[static_cast<size_t>(r)].rank = r;
    all[static_cast<size_t>(r)].answered = r == ctx.world_rank();
  }
  all[static_cast<size_t>(ctx.world_rank())] = progress::mine(ctx.world_rank());
  if (!ctx.is_root()) return {};
  if (!impl_->threaded) return ctx.world_size() == 1 ? all : std::vector<RankProgress>{};
  std::lock_guard<std::mutex> lock(impl_->mu);
  int id = ++impl_->asked;
  // Sends to a stopped rank never complete: the requests are left behind (the run is aborting).
  for (int r = 1; r < ctx.world_size(); ++r) {
    MPI_Request req;
    if (MPI_Isend(&impl_->asked, 1, MPI_INT, r, kTagAsk, impl_->comm, &req) == MPI_SUCCESS)
      MPI_Request_free(&req);
  }
  int missing = ctx.world_size() - 1;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (missing > 0 && std::chrono::steady_clock::now() < deadline) {
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kTagState, impl_->comm, &flag, &st) != MPI_SUCCESS) break;
    if (!flag) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    long long msg[4] = {0, 0, 0, 0};
    if (MPI_Recv(msg, 4, MPI_LONG_LONG, st.MPI_SOURCE, kTagState, impl_->comm, MPI_STATUS_IGNORE) !=
        MPI_SUCCESS)
      break;
    if (msg[0] != id) continue;  // an answer to an earlier question
    RankProgress& p = all[static_cast<size_t>(st.MPI_SOURCE)];
    if (p.answered) continue;
    p.case_index = msg[1];
    p.started = msg[2];
    p.finished = msg[3];
    p.answered = true;
    --missing;
  }
  return all;
}

ProgressChannel::Root ProgressChannel::root_state(double seconds) {
  if (impl_->ctx.is_root() || !impl_->threaded) return Root::running;
  std::lock_guard<std::mutex> lock(impl_->mu);
  int id = ++impl_->asked;
  MPI_Request req;
  if (MPI_Isend(&impl_->asked, 1, MPI_INT, 0, kTagAsk, impl_->comm, &req) != MPI_SUCCESS)
    return Root::running;  // a broken channel knows nothing: assume it runs
  MPI_Request_free(&req);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    int notice = 0, flag = 0;
    if (MPI_Iprobe(0, kTagRootAbort, impl_->comm, &notice, MPI_STATUS_IGNORE) != MPI_SUCCESS ||
        MPI_Iprobe(0, kTagState, impl_->comm, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return Root::running;
    if (notice) return Root::recording;
    if (!flag) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    long long msg[4] = {0, 0, 0, 0};
    if (MPI_Recv(msg, 4, MPI_LONG_LONG, 0, kTagState, impl_->comm, MPI_STATUS_IGNORE) !=
        MPI_SUCCESS)
      return Root::running;
    if (msg[0] == id) return Root::running;
  }
  return Root::silent;
}

void ProgressChannel::post_root_abort() {
  const Context& ctx = impl_->ctx;
  if (!ctx.is_root() || !impl_->threaded) return;
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->root_abort_posted) return;
  impl_->root_abort_posted = true;
  static const int kNotice = 1;  // a stopped or dead peer never receives it: never wait
  for (int r = 1; r < ctx.world_size(); ++r) {
    MPI_Request req;
    if (MPI_Isend(&kNotice, 1, MPI_INT, r, kTagRootAbort, impl_->comm, &req) == MPI_SUCCESS)
      MPI_Request_free(&req);
  }
}

void ProgressChannel::post_abort(const std::string& reason) {
  const Context& ctx = impl_->ctx;
  if (ctx.is_root() || !impl_->threaded) return;
  std::lock_guard<std::mutex> lock(impl_->mu);
  MPI_Request req;
  if (MPI_Isend(reason.data(), static_cast<int>(reason.size()), MPI_CHAR, 0, kTagAbort, impl_->comm,
                &req) != MPI_SUCCESS)
    return;
  // Eager for a short text; a dead rank 0 never receives it, so wait a second at most.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  int done = 0;
  while (!done && std::chrono::steady_clock::now() < deadline) {
    if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return;
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!done) MPI_Request_free(&req);
}

#else  // built without MPI: one process, nothing to ask

struct ProgressChannel::Impl {
  const Context& ctx;
};

ProgressChannel::ProgressChannel(const Context& ctx, std::function<void(const std::string&)>)
    : impl_(std::make_unique<Impl>(Impl{ctx})) {
  g_channel = this;
}
ProgressChannel::~ProgressChannel() { g_channel = nullptr; }
std::vector<RankProgress> ProgressChannel::collect(double) {
  return {progress::mine(impl_->ctx.world_rank())};
}
ProgressChannel::Root ProgressChannel::root_state(double) { return Root::running; }
void ProgressChannel::post_root_abort() {}
void ProgressChannel::post_abort(const std::string&) {}

#endif

ProgressChannel* ProgressChannel::current() { return g_channel; }

Unfinished who_did_not_finish(const Context& ctx, double seconds) {
  ProgressChannel* ch = ProgressChannel::current();
  if (!ch || !ctx.is_root()) return {};
  return describe_unfinished(ch->collect(seconds), ctx.rank_hosts());
}

}  // namespace clusterbench
