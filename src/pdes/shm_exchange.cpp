#include "src/pdes/shm_exchange.hpp"

#include <immintrin.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "stepsim/core/fatal.hpp"

namespace stepsim::pdes {
namespace {

constexpr int kOverflowTag = 7302;
// A mailbox (events one rank sends another in one window) holds up to this many events.
constexpr std::size_t kMaxCapacity = 16384;
// The mailboxes of one rank share this many bytes (two per destination rank: windows alternate).
constexpr std::size_t kSegmentBudget = std::size_t{4} << 20;
constexpr std::size_t kLine = 64;

// Pause instructions before a waiting rank yields its core (sched_yield) between checks: ~80 us
// (~40 ns a pause on a current x86 core). A bounded spin catches a peer that is running or is
// about to be; yielding keeps an oversubscribed run (more ranks than free cores) from starving
// the rank it waits for. Yielding early costs much more than it saves on a loaded machine: each
// yield may hand the core to another process for a whole time slice (BENCHMARKS.md).
unsigned spin_limit() {
  if (const char* v = std::getenv("STEPSIM_SYNC_SPIN"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    const unsigned long n = std::strtoul(v, &end, 10);
    if (*end == '\0' && n <= 1u << 24) return static_cast<unsigned>(n);
  }
  return 2000;
}

// After the spin a waiting rank sleeps in the kernel (a futex on the counter's low half, woken
// by the rank that publishes) or, with STEPSIM_SYNC_WAIT=yield, calls sched_yield between
// checks. Sleeping gives the core away until the awaited rank has published, where a yield on an
// idle core returns at once and burns it (BENCHMARKS.md).
bool futex_wait_enabled() {
  const char* v = std::getenv("STEPSIM_SYNC_WAIT");
  return v == nullptr || std::strcmp(v, "yield") != 0;
}

// Shared between processes: no FUTEX_PRIVATE_FLAG.
void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t seen) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT, seen, nullptr, nullptr,
          0);
}
void futex_wake_all(std::atomic<std::uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr,
          0);
}

}  // namespace

// Per rank, at the start of its segment: the last window it published and its values to reduce
// for the last two windows (window k uses parity k % 2).
struct alignas(kLine) ShmExchange::Header {
  std::atomic<std::uint64_t> epoch{0};
  std::atomic<std::uint32_t> wake{0};      // the epoch's low half: the futex word
  std::atomic<std::uint32_t> sleepers{0};  // ranks asleep (or about to be) on `wake`
  alignas(kLine) std::int64_t values[2][kMaxValues] = {};
};

// Events from one rank to another for windows of one parity: the count, then the events.
struct alignas(kLine) ShmExchange::Mailbox {
  std::uint64_t count = 0;
  [[nodiscard]] Event* events() {
    return reinterpret_cast<Event*>(reinterpret_cast<std::byte*>(this) + kLine);
  }
};

static_assert(sizeof(Event) == kLine);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "the window counter is shared between processes");
static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t),
              "a futex word is a plain 32-bit integer");

std::unique_ptr<ShmExchange> ShmExchange::create(int rank, int size) {
  if (size < 2) return nullptr;
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int node_rank = -1;
  int node_size = 0;
  MPI_Comm_rank(node, &node_rank);
  MPI_Comm_size(node, &node_size);
  // Every rank on this node, in world order (the split keeps the order of the key, the rank).
  int one_node = node_size == size && node_rank == rank ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &one_node, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (!one_node) {
    MPI_Comm_free(&node);
    return nullptr;
  }
  const auto ranks = static_cast<std::size_t>(size);
  const std::size_t capacity =
      std::clamp<std::size_t>(kSegmentBudget / (2 * ranks * kLine), 256, kMaxCapacity);
  const std::size_t stride = kLine + capacity * sizeof(Event);
  const std::size_t bytes = sizeof(Header) + 2 * ranks * stride;
  // MPI aligns a shared segment to 8 bytes only (Open MPI: 8 past a page): each rank's part
  // starts at the segment's first 64-byte boundary. Every process maps the segment page-aligned,
  // so that boundary is the same offset into it everywhere.
  const auto line_up = [](void* p) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    return reinterpret_cast<std::byte*>((a + kLine - 1) / kLine * kLine);
  };
  MPI_Info info = MPI_INFO_NULL;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "true");  // each segment near its rank
  void* mine = nullptr;
  MPI_Win win = MPI_WIN_NULL;
  MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes + kLine), 1, info, node, &mine, &win);
  MPI_Info_free(&info);
  MPI_Comm_free(&node);  // the window keeps what it needs
  std::byte* const own = line_up(mine);
  new (own) Header{};
  for (std::size_t i = 0; i < 2 * ranks; ++i) new (own + sizeof(Header) + i * stride) Mailbox{};
  std::vector<std::byte*> bases(ranks, nullptr);
  for (int r = 0; r < size; ++r) {
    MPI_Aint got = 0;
    int unit = 0;
    void* base = nullptr;
    MPI_Win_shared_query(win, r, &got, &unit, &base);
    STEPSIM_CHECK(static_cast<std::size_t>(got) >= bytes + kLine, "a shared segment too small");
    bases[static_cast<std::size_t>(r)] = line_up(base);
  }
  MPI_Barrier(MPI_COMM_WORLD);  // every header is initialised before anyone reads one
  return std::unique_ptr<ShmExchange>(new ShmExchange(rank, size, win, std::move(bases), capacity));
}

ShmExchange::ShmExchange(int rank, int size, MPI_Win win, std::vector<std::byte*> bases,
                         std::size_t capacity)
    : rank_(rank), size_(size), win_(win), bases_(std::move(bases)), capacity_(capacity) {}

ShmExchange::~ShmExchange() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Win_free(&win_);
}

ShmExchange::Header& ShmExchange::header(int rank) const {
  return *std::launder(reinterpret_cast<Header*>(bases_[static_cast<std::size_t>(rank)]));
}

ShmExchange::Mailbox& ShmExchange::mailbox(int from, int to, std::uint64_t parity) const {
  const std::size_t stride = kLine + capacity_ * sizeof(Event);
  std::byte* at = bases_[static_cast<std::size_t>(from)] + sizeof(Header) +
                  (2 * static_cast<std::size_t>(to) + parity) * stride;
  return *std::launder(reinterpret_cast<Mailbox*>(at));
}

void ShmExchange::wait_for(int rank, std::uint64_t epoch) const {
  Header& h = header(rank);
  const std::atomic<std::uint64_t>& published = h.epoch;
  static const unsigned spins = spin_limit();
  static const bool sleep = futex_wait_enabled();
  for (unsigned n = 0; published.load(std::memory_order_acquire) < epoch; ++n) {
    if (n < spins) {
      _mm_pause();
    } else if (!sleep) {
      sched_yield();
    } else {
      // Announce the sleeper before the last check (seq_cst on both sides: either the publisher
      // sees it and wakes, or this check sees the new epoch); the wait returns at once if `wake`
      // has moved since it was read.
      const std::uint32_t seen = h.wake.load(std::memory_order_seq_cst);
      h.sleepers.fetch_add(1, std::memory_order_seq_cst);
      if (published.load(std::memory_order_seq_cst) < epoch) futex_wait(h.wake, seen);
      h.sleepers.fetch_sub(1, std::memory_order_seq_cst);
    }
  }
}

void ShmExchange::exchange_min(std::span<const int> neighbours, std::span<std::vector<Event>> out,
                               std::vector<Event>& in, std::span<std::int64_t> values) {
  STEPSIM_CHECK(values.size() <= kMaxValues, "too many values to reduce with the exchange");
  STEPSIM_CHECK(out.size() == neighbours.size(), "exchange buffers do not match the neighbours");
  // Window k writes the parity-k%2 half. A rank gets to window k + 2 (the same half again) only
  // after every rank published k + 1, which each did after reading window k: no half is
  // overwritten before it is read.
  const std::uint64_t epoch = ++epoch_;
  const std::uint64_t parity = epoch & 1;
  overflow_.clear();
  for (std::size_t i = 0; i < neighbours.size(); ++i) {
    Mailbox& box = mailbox(rank_, neighbours[i], parity);
    const std::vector<Event>& events = out[i];
    box.count = events.size();
    if (events.size() <= capacity_) {
      if (!events.empty()) {
        std::memcpy(static_cast<void*>(box.events()), events.data(), events.size() * sizeof(Event));
      }
      continue;
    }
    const std::size_t bytes = events.size() * sizeof(Event);
    STEPSIM_CHECK(bytes <= static_cast<std::size_t>(INT_MAX),
                  "more than 2 GiB of events for one rank in one window");
    overflow_.emplace_back();
    MPI_Isend(events.data(), static_cast<int>(bytes), MPI_BYTE, neighbours[i], kOverflowTag,
              MPI_COMM_WORLD, &overflow_.back());
  }
  Header& me = header(rank_);
  std::copy(values.begin(), values.end(), me.values[parity]);
  me.epoch.store(epoch, std::memory_order_release);
  me.wake.store(static_cast<std::uint32_t>(epoch), std::memory_order_seq_cst);
  if (me.sleepers.load(std::memory_order_seq_cst) > 0) futex_wake_all(me.wake);

  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    wait_for(r, epoch);
    const std::int64_t* theirs = header(r).values[parity];
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = std::min(values[i], theirs[i]);
  }
  for (int nb : neighbours) {
    Mailbox& box = mailbox(nb, rank_, parity);
    const std::size_t count = box.count;
    const std::size_t at = in.size();
    in.resize(at + count);
    if (count <= capacity_) {
      if (count > 0) {
        std::memcpy(static_cast<void*>(in.data() + at), box.events(), count * sizeof(Event));
      }
      continue;
    }
    MPI_Recv(in.data() + at, static_cast<int>(count * sizeof(Event)), MPI_BYTE, nb, kOverflowTag,
             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  if (!overflow_.empty()) {
    MPI_Waitall(static_cast<int>(overflow_.size()), overflow_.data(), MPI_STATUSES_IGNORE);
  }
}

}  // namespace stepsim::pdes
