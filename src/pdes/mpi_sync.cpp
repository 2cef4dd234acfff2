#include "stepsim/pdes/mpi_sync.hpp"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "src/pdes/shm_exchange.hpp"
#include "stepsim/core/fatal.hpp"

namespace stepsim::pdes {
namespace {

constexpr int kEventTag = 7301;

void mpi_fatal(const std::string& message) {
  std::fprintf(stderr, "stepsim: internal error: %s\n", message.c_str());
  std::fflush(stderr);
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, 3);
  std::abort();
}

}  // namespace

namespace {

// The first of `names` set to an integer >= 0, or -1.
int env_int(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (*end == '\0' && n >= 0 && n <= INT_MAX) return static_cast<int>(n);
  }
  return -1;
}

}  // namespace

Launch launch_from_environment() {
  Launch l;
  const int rank = env_int({"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"});
  const int size =
      env_int({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"});
  l.launched = rank >= 0;
  if (l.launched) {
    l.rank = rank;
    l.size = std::max({1, size, rank + 1});
  }
  return l;
}

MpiSession::MpiSession(int* argc, char*** argv, Start when)
    : argc_(argc), argv_(argv), launch_(launch_from_environment()) {
  rank_ = launch_.rank;
  size_ = launch_.size;
  if (when == Start::now) start();
}

void MpiSession::start() {
  if (started_) return;
  started_ = true;
  // Open MPI's shared-memory transport sends messages above 4 KiB by rendezvous (a handshake and
  // a kernel-assisted copy); per-window event batches are often 10-60 KiB, and the handshake
  // costs more than the copy. Raise the eager limit unless the user set it (measured in
  // BENCHMARKS.md). Other MPI libraries ignore the variable.
  setenv("OMPI_MCA_btl_vader_eager_limit", "65536", /*overwrite=*/0);
  int provided = 0;
  MPI_Init_thread(argc_, argv_, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  set_fatal_handler(&mpi_fatal);
  if (provided < MPI_THREAD_FUNNELED) {
    fatal("the MPI library does not provide MPI_THREAD_FUNNELED, needed with OpenMP threads");
  }
}

MpiSession::~MpiSession() {
  if (!started_) return;
  set_fatal_handler(nullptr);
  MPI_Finalize();
}

bool mpi_running() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized != 0 && finalized == 0;
}

std::unique_ptr<Sync> make_sync() {
  if (mpi_running()) return std::make_unique<MpiSync>();
  return std::make_unique<SerialSync>();
}

bool all_ranks_ok(bool ok) {
  if (!mpi_running()) return ok;
  int mine = ok ? 1 : 0;
  int all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all != 0;
}

void MpiSession::barrier() const {
  if (started_) MPI_Barrier(MPI_COMM_WORLD);
}

Result<SyncTransport> sync_transport_from_environment() {
  const char* v = std::getenv("STEPSIM_SYNC");
  const std::string value = v != nullptr ? v : "";
  if (value.empty() || value == "shm") return SyncTransport::shm;
  if (value == "mpi") return SyncTransport::mpi;
  return Error{"STEPSIM_SYNC: '" + value + "' is not a transport; allowed values: shm, mpi"};
}

struct MpiSync::Impl {
  int rank = 0;
  int size = 1;
  std::vector<int> neighbours;
  std::vector<MPI_Request> requests;
  bool fused = false;    // every rank neighbours every other (set_neighbours)
  bool decided = false;  // whether to use shared memory (the first set_neighbours)
  std::unique_ptr<ShmExchange> shm;
};

MpiSync::MpiSync() : impl_(std::make_unique<Impl>()) {
  MPI_Comm_rank(MPI_COMM_WORLD, &impl_->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &impl_->size);
}

MpiSync::~MpiSync() = default;

int MpiSync::rank() const {
  return impl_->rank;
}
int MpiSync::size() const {
  return impl_->size;
}

void MpiSync::set_neighbours(std::span<const int> ranks) {
  impl_->neighbours.assign(ranks.begin(), ranks.end());
  impl_->requests.resize(ranks.size());
  // exchange_min carries the values in the messages only if every rank hears from every other:
  // all ranks must agree on it (one rank may neighbour everyone while another does not).
  // Shared memory only if every rank asks for it (STEPSIM_SYNC), in the same reduction.
  auto transport = sync_transport_from_environment();
  if (!transport) fatal(transport.error().message);
  int flags[2] = {ranks.size() + 1 == static_cast<std::size_t>(impl_->size) ? 1 : 0,
                  !impl_->decided && *transport == SyncTransport::shm ? 1 : 0};
  MPI_Allreduce(MPI_IN_PLACE, flags, 2, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  impl_->fused = flags[0] != 0;
  if (!impl_->decided) {
    impl_->decided = true;
    if (flags[1] != 0) impl_->shm = ShmExchange::create(impl_->rank, impl_->size);
  }
}

bool MpiSync::shared_memory() const {
  return impl_->shm != nullptr;
}

void MpiSync::exchange(std::span<std::vector<Event>> out, std::vector<Event>& in) {
  exchange_impl(out, in, {});
}

void MpiSync::exchange_min(std::span<std::vector<Event>> out, std::vector<Event>& in,
                           std::span<std::int64_t> values) {
  STEPSIM_CHECK(values.size() <= kMaxFusedValues, "too many values to fuse with the exchange");
  if (impl_->shm) {
    impl_->shm->exchange_min(impl_->neighbours, out, in, values);
    return;
  }
  if (!impl_->fused) {
    exchange_impl(out, in, {});
    allreduce_min(values);
    return;
  }
  // Every other rank is a neighbour: each message ends with a trailer event whose bytes are the
  // sender's values, and every rank takes the minimum of its own and all it receives.
  static_assert(kMaxFusedValues * sizeof(std::int64_t) == sizeof(Event));
  std::array<std::int64_t, kMaxFusedValues> packed{};
  std::copy(values.begin(), values.end(), packed.begin());
  Event trailer;
  std::memcpy(static_cast<void*>(&trailer), packed.data(), sizeof(Event));
  for (auto& v : out) v.push_back(trailer);
  exchange_impl(out, in, values);
}

void MpiSync::exchange_impl(std::span<std::vector<Event>> out, std::vector<Event>& in,
                            std::span<std::int64_t> trailer_min) {
  // One message per neighbour per window, possibly empty. Messages between a pair of ranks are
  // non-overtaking, so consecutive windows cannot mix.
  auto& nbs = impl_->neighbours;
  STEPSIM_CHECK(out.size() == nbs.size(), "exchange buffers do not match the neighbour list");
  for (std::size_t i = 0; i < nbs.size(); ++i) {
    const std::size_t bytes = out[i].size() * sizeof(Event);
    STEPSIM_CHECK(bytes <= static_cast<std::size_t>(INT_MAX),
                  "more than 2 GiB of events for one rank in one window");
    MPI_Isend(out[i].data(), static_cast<int>(bytes), MPI_BYTE, nbs[i], kEventTag, MPI_COMM_WORLD,
              &impl_->requests[i]);
  }
  for (int nb : nbs) {
    MPI_Message msg;
    MPI_Status status;
    MPI_Mprobe(nb, kEventTag, MPI_COMM_WORLD, &msg, &status);
    int bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    STEPSIM_CHECK(bytes % static_cast<int>(sizeof(Event)) == 0, "truncated event message");
    const std::size_t at = in.size();
    in.resize(at + static_cast<std::size_t>(bytes) / sizeof(Event));
    MPI_Mrecv(in.data() + at, bytes, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
    if (!trailer_min.empty()) {
      STEPSIM_CHECK(in.size() > at, "an event message without its trailer");
      std::array<std::int64_t, kMaxFusedValues> theirs{};
      std::memcpy(theirs.data(), static_cast<const void*>(&in.back()), sizeof(Event));
      in.pop_back();
      for (std::size_t i = 0; i < trailer_min.size(); ++i)
        trailer_min[i] = std::min(trailer_min[i], theirs[i]);
    }
  }
  MPI_Waitall(static_cast<int>(impl_->requests.size()), impl_->requests.data(),
              MPI_STATUSES_IGNORE);
}

void MpiSync::allreduce_min(std::span<std::int64_t> values) {
  MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_INT64_T, MPI_MIN,
                MPI_COMM_WORLD);
}

void MpiSync::allreduce_sum(std::span<std::uint64_t> values) {
  MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_UINT64_T, MPI_SUM,
                MPI_COMM_WORLD);
}

std::vector<double> MpiSync::gather(std::span<const double> mine) {
  std::vector<double> all;
  if (impl_->rank == 0) all.resize(mine.size() * static_cast<std::size_t>(impl_->size));
  MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(),
             static_cast<int>(mine.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  return all;
}

}  // namespace stepsim::pdes
