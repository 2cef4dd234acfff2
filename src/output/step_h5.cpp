#include "stepsim/output/step_h5.hpp"

#include "src/output/h5_chunks.hpp"
#include "src/output/h5_mpi.hpp"
#include "src/output/stat_h5.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <limits>
#include <vector>

#include "stepsim/output/samples_h5.hpp"
#include "stepsim/version.hpp"

namespace stepsim::output {

namespace {

// Closes an HDF5 handle on scope exit.
struct Handle {
  hid_t id = -1;
  herr_t (*close)(hid_t) = nullptr;
  Handle(hid_t i, herr_t (*c)(hid_t)) : id(i), close(c) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() {
    if (id >= 0 && close != nullptr) close(id);
  }
  operator hid_t() const { return id; }  // NOLINT: a handle is used where HDF5 wants an id
};

bool attr_string(hid_t obj, const char* name, const std::string& value) {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type, std::max<std::size_t>(1, value.size()));
  H5Tset_strpad(type, H5T_STR_NULLPAD);
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle attr(H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (attr < 0) return false;
  const std::string v = value.empty() ? std::string(1, '\0') : value;
  return H5Awrite(attr, type, v.data()) >= 0;
}

// A string too long for an attribute (HDF5 keeps attributes in a 64 KiB object header): a
// scalar string dataset `name` in `group`.
bool dataset_string(hid_t group, const char* name, const std::string& value) {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type, std::max<std::size_t>(1, value.size()));
  H5Tset_strpad(type, H5T_STR_NULLPAD);
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle dcpl(dataset_create_plist(), H5Pclose);
  Handle ds(H5Dcreate2(group, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose);
  if (ds < 0) return false;
  return H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, value.data()) >= 0;
}

template <class T>
bool attr_number(hid_t obj, const char* name, hid_t type, T value) {
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle attr(H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  return attr >= 0 && H5Awrite(attr, type, &value) >= 0;
}

struct StepField {
  const char* name;
  std::size_t offset;
  hid_t type;
};

// A table of `n` rows of `Row` from `rows`.
template <class Row>
bool write_table(hid_t file, const char* name, std::size_t rows_n, const TableRows& rows,
                 const std::vector<StepField>& fields, const std::string& doc,
                 ChunkScratch& scratch) {
  // Rows have no padding, so the file's type is the memory's: no conversion, which parallel
  // writes through filters need (and no stray padding bytes in the file).
  Handle mem(H5Tcreate(H5T_COMPOUND, sizeof(Row)), H5Tclose);
  std::size_t size = 0;
  for (const StepField& f : fields) {
    H5Tinsert(mem, f.name, f.offset, f.type);
    size += H5Tget_size(f.type);
  }
  if (size != sizeof(Row)) return false;
  const hid_t disk = mem;
  const auto n = static_cast<hsize_t>(rows_n);
  Handle space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  Handle dcpl(dataset_create_plist(), H5Pclose);
  const hsize_t chunk = std::min<hsize_t>(n, 65536);
  if (n > 0) {
    H5Pset_chunk(dcpl, 1, &chunk);
    // Byte shuffle then deflate level 1: the tables' columns of small integers and doubles
    // compress to a third of deflate 4's size in a third of its time (BENCHMARKS.md); the
    // writer compresses the chunks itself (h5_chunks.hpp).
    H5Pset_shuffle(dcpl);
    H5Pset_deflate(dcpl, kTableDeflateLevel);
  }
  Handle ds(H5Dcreate2(file, name, disk, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose);
  if (ds < 0) return false;
  if (!attr_string(ds, "doc", doc)) return false;
  if (n == 0) return true;
  return write_shuffled_chunks(ds, rows, sizeof(Row), n, chunk, scratch);
}

// A table of all `rows`.
template <class Row>
bool write_table(hid_t file, const char* name, const std::vector<Row>& rows,
                 const std::vector<StepField>& fields, const std::string& doc,
                 ChunkScratch& scratch) {
  return write_table<Row>(file, name, rows.size(), TableRows{rows.data(), {}}, fields, doc,
                          scratch);
}

// A table of the rows `rows` holds, or else of those `fill` makes.
template <class Row>
bool write_table(hid_t file, const char* name, const std::vector<Row>& rows,
                 const RowFill<Row>& fill, const std::vector<StepField>& fields,
                 const std::string& doc, ChunkScratch& scratch) {
  if (!fill.fill) return write_table(file, name, rows, fields, doc, scratch);
  TableRows made;
  made.fill = [&fill](std::size_t first, std::size_t count, unsigned char* out) {
    fill.fill(first, count, reinterpret_cast<Row*>(out));
  };
  return write_table<Row>(file, name, fill.rows, made, fields, doc, scratch);
}

#define STEPSIM_FIELD(Row, member, type) \
  StepField {                            \
#member, offsetof(Row, member), type \
  }

// /jobs: each job of a multi-job run (none for one job).
bool write_jobs(hid_t file, const StepRows& r, ChunkScratch& scratch) {
  if (r.jobs.empty()) return true;
  constexpr std::size_t kText = 64;
#pragma pack(push, 1)
  struct Job {
    char name[kText], gpus_text[kText];
    double step_s, mfu, model_flops, tokens_per_step, compute_s, bubble_s, optimizer_s;
    double exposed_s[kGroups];
    std::uint32_t gpus, critical_stage, first_gpu;
  };
#pragma pack(pop)
  std::vector<Job> rows;
  for (const JobsRow& j : r.jobs) {
    Job x{};
    j.name.copy(x.name, kText - 1);
    j.gpus_text.copy(x.gpus_text, kText - 1);
    x.step_s = j.step_s;
    x.mfu = r.figures.complete ? j.mfu : std::numeric_limits<double>::quiet_NaN();
    x.model_flops = j.model_flops;
    x.tokens_per_step = j.tokens_per_step;
    x.compute_s = j.compute_s;
    x.bubble_s = j.bubble_s;
    x.optimizer_s = j.optimizer_s;
    std::copy(j.exposed_s.begin(), j.exposed_s.end(), std::begin(x.exposed_s));
    x.gpus = j.gpus;
    x.critical_stage = j.critical_stage;
    x.first_gpu = j.stage_gpu.empty() ? 0 : j.stage_gpu[0];
    rows.push_back(x);
  }
  Handle text(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(text, kText);
  H5Tset_strpad(text, H5T_STR_NULLPAD);
  const hsize_t groups = kGroups;
  Handle exposed(H5Tarray_create2(H5T_NATIVE_DOUBLE, 1, &groups), H5Tclose);
  const hid_t f64 = H5T_NATIVE_DOUBLE, u32 = H5T_NATIVE_UINT32;
  return write_table(
      file, "/jobs", rows,
      {STEPSIM_FIELD(Job, name, text), STEPSIM_FIELD(Job, gpus_text, text),
       STEPSIM_FIELD(Job, gpus, u32), STEPSIM_FIELD(Job, first_gpu, u32),
       STEPSIM_FIELD(Job, step_s, f64), STEPSIM_FIELD(Job, mfu, f64),
       STEPSIM_FIELD(Job, model_flops, f64), STEPSIM_FIELD(Job, tokens_per_step, f64),
       STEPSIM_FIELD(Job, critical_stage, u32), STEPSIM_FIELD(Job, compute_s, f64),
       STEPSIM_FIELD(Job, bubble_s, f64), STEPSIM_FIELD(Job, optimizer_s, f64),
       STEPSIM_FIELD(Job, exposed_s, exposed)},
      "a multi-job run (the scenario's jobs:): each job's step on the shared fabric, from time "
      "0; gpus_text its GPUs as given, first_gpu the GPU of its stage 0; mfu NaN when the run "
      "did not complete; exposed_s by group (tp, cp, ep, pp, dp) of its critical stage",
      scratch);
}

}  // namespace

void init_hdf5() {
  // HDF5 1.10 closes open files again when it terminates (at exit, and at MPI_Finalize when MPI
  // ran before it started), and a file whose close failed on a full disk crashes it there. The
  // writers close every file themselves, once; started before MPI and without its exit handler,
  // HDF5 never closes one again.
  H5dont_atexit();
  H5open();
  if (std::getenv("STEPSIM_H5_ERRORS") == nullptr) H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

namespace {

// /meta: the run's description and the step's summary figures, as attributes.
Result<bool> write_meta(hid_t file, const RunMeta& meta, const StepRows& rows,
                        const std::string& path) {
  const StepFigures& r = rows.figures;
  Handle g(H5Gcreate2(file, "/meta", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  bool ok = g >= 0;
  ok = ok && attr_number(g, "schema_version", H5T_NATIVE_INT, kSchemaVersion);
  ok = ok && attr_string(g, "stepsim_version", kVersion);
  ok = ok && attr_string(g, "scenario_path", meta.scenario_path);
  if (meta.scenario_text.size() <= kMaxAttributeText) {
    ok = ok && attr_string(g, "scenario", meta.scenario_text);
  } else if (!dataset_string(g, "scenario", meta.scenario_text)) {
    return Error{"--output: writing '" + path + "' failed: the scenario text (" +
                 std::to_string(meta.scenario_text.size()) +
                 " bytes) could not be stored as dataset /meta/scenario"};
  }
  ok = ok && attr_string(g, "sets", meta.sets);
  ok = ok && attr_string(g, "fidelity", meta.fidelity);
  ok = ok && attr_string(g, "step_mode", meta.step_mode);
  ok = ok && attr_number(g, "cell_bytes", H5T_NATIVE_INT64, meta.cell_bytes);
  ok = ok && attr_number(g, "folded_rails", H5T_NATIVE_UINT32, r.folded_rails);
  ok = ok && attr_string(g, "model", meta.model);
  ok = ok && attr_string(g, "topology", meta.topology);
  ok = ok && attr_string(g, "gpu", meta.gpu);
  ok = ok && attr_number(g, "gpus", H5T_NATIVE_INT64, meta.gpus);
  ok = ok && attr_number(g, "ranks", H5T_NATIVE_INT64, meta.ranks);
  ok = ok && attr_number(g, "threads", H5T_NATIVE_INT64, meta.threads);
  ok = ok && attr_number(g, "wall_s", H5T_NATIVE_DOUBLE, meta.wall_s);
  ok = ok && attr_number(g, "events", H5T_NATIVE_UINT64, r.events);
  ok = ok && attr_number(g, "complete", H5T_NATIVE_INT, r.complete ? 1 : 0);
  ok = ok && attr_number(g, "step_s", H5T_NATIVE_DOUBLE, r.step_s);
  ok = ok && attr_string(g, "status", r.status);
  // A partial step has no MFU: the whole step's FLOPs over part of its time would overstate it.
  const double mfu = r.complete ? r.mfu : std::numeric_limits<double>::quiet_NaN();
  ok = ok && attr_number(g, "mfu", H5T_NATIVE_DOUBLE, mfu);
  ok = ok && attr_number(g, "model_flops", H5T_NATIVE_DOUBLE, r.model_flops);
  ok = ok && attr_number(g, "peak_flops", H5T_NATIVE_DOUBLE, r.peak_flops);
  ok = ok && attr_number(g, "critical_stage", H5T_NATIVE_UINT32, r.critical_stage);
  ok = ok && attr_number(g, "compute_s", H5T_NATIVE_DOUBLE, r.compute_s);
  ok = ok && attr_number(g, "bubble_s", H5T_NATIVE_DOUBLE, r.bubble_s);
  ok = ok && attr_number(g, "optimizer_s", H5T_NATIVE_DOUBLE, r.optimizer_s);
  ok = ok && attr_number(g, "digest", H5T_NATIVE_UINT64, r.digest);
  ok = ok && attr_number(g, "tokens_per_step", H5T_NATIVE_DOUBLE, meta.tokens_per_step);
  ok = ok && attr_number(g, "cct_p50_us", H5T_NATIVE_DOUBLE, r.cct_p50_us);
  ok = ok && attr_number(g, "cct_p99_us", H5T_NATIVE_DOUBLE, r.cct_p99_us);
  ok = ok && attr_number(g, "cct_max_us", H5T_NATIVE_DOUBLE, r.cct_max_us);
  ok = ok && attr_number(g, "messages", H5T_NATIVE_UINT64, r.messages);
  ok = ok && attr_number(g, "fct_p50_us", H5T_NATIVE_DOUBLE, r.fct_p50_us);
  ok = ok && attr_number(g, "fct_p99_us", H5T_NATIVE_DOUBLE, r.fct_p99_us);
  ok = ok && attr_number(g, "fct_max_us", H5T_NATIVE_DOUBLE, r.fct_max_us);
  ok = ok && attr_number(g, "retransmissions", H5T_NATIVE_UINT64, r.retransmissions);
  ok = ok && attr_string(g, "memory_check", meta.memory_check);
  ok = ok && attr_number(g, "memory_exceeded", H5T_NATIVE_INT, meta.memory_exceeded ? 1 : 0);
  ok = ok && attr_number(g, "memory_peak_bytes", H5T_NATIVE_DOUBLE, meta.memory_peak);
  ok = ok && attr_number(g, "memory_peak_stage", H5T_NATIVE_UINT32, meta.memory_peak_stage);
  ok = ok && attr_number(g, "memory_capacity_bytes", H5T_NATIVE_DOUBLE, meta.memory_capacity);
  for (std::size_t i = 0; i < kGroups && ok; ++i) {
    ok = attr_number(g, ("exposed_" + rows.group_names.at(i) + "_s").c_str(), H5T_NATIVE_DOUBLE,
                     r.exposed_s[i]);
  }
  return ok;
}

// The table rows are packed: a job column after the others leaves no padding (write_table).

// /ops.
bool write_ops(hid_t file, const StepRows& r, ChunkScratch& scratch) {
  const hid_t u16 = H5T_NATIVE_UINT16, u32 = H5T_NATIVE_UINT32, f64 = H5T_NATIVE_DOUBLE;
  using Op = OpsRow;
  return write_table(
      file, "/ops", r.ops, r.ops_fill,
      {STEPSIM_FIELD(Op, gpu, u32), STEPSIM_FIELD(Op, stage, u32), STEPSIM_FIELD(Op, kind, u16),
       STEPSIM_FIELD(Op, group, u16), STEPSIM_FIELD(Op, micro, u32), STEPSIM_FIELD(Op, chunk, u32),
       STEPSIM_FIELD(Op, layer, u32), STEPSIM_FIELD(Op, start_s, f64),
       STEPSIM_FIELD(Op, end_s, f64), STEPSIM_FIELD(Op, job, u32)},
      "per-GPU op timeline of the simulated pipeline; kind 0 forward, 1 backward, 2 optimizer, "
      "3 blocking collective (group: 0 tp, 1 cp, 2 ep, 3 pp, 4 dp), 4 waiting for another stage; "
      "job: the /jobs row (0 for one job)",
      scratch);
}

// /collectives.
bool write_collectives(hid_t file, const StepRows& r, ChunkScratch& scratch) {
  const hid_t u16 = H5T_NATIVE_UINT16, u32 = H5T_NATIVE_UINT32;
  const hid_t i64 = H5T_NATIVE_INT64, f64 = H5T_NATIVE_DOUBLE;
  using Coll = CollectivesRow;
  return write_table(
      file, "/collectives", r.colls, r.colls_fill,
      {STEPSIM_FIELD(Coll, id, u32), STEPSIM_FIELD(Coll, stage, u32),
       STEPSIM_FIELD(Coll, group, u16), STEPSIM_FIELD(Coll, kind, u16),
       STEPSIM_FIELD(Coll, gpus, u32), STEPSIM_FIELD(Coll, bytes, i64),
       STEPSIM_FIELD(Coll, start_s, f64), STEPSIM_FIELD(Coll, end_s, f64),
       STEPSIM_FIELD(Coll, busbw_gbs, f64), STEPSIM_FIELD(Coll, job, u32)},
      "every collective of the step; group 0 tp, 1 cp, 2 ep, 3 pp, 4 dp; kind 0 "
      "allreduce, 1 reducescatter, 2 allgather, 3 broadcast, 4 reduce, 5 "
      "alltoall, 6 alltoallv, 7 sendrecv, 8 send (a pipeline send); bytes is nccl-tests' S; "
      "job: the /jobs row (0 for one job)",
      scratch);
}

// /flows and its sampling attributes; the counter and time columns are ConnectionFlow's
// declared statistics.
bool write_flows(hid_t file, const StepRows& r, ChunkScratch& scratch) {
  const hid_t u16 = H5T_NATIVE_UINT16, u32 = H5T_NATIVE_UINT32;
  using Flow = FlowsRow;
  std::vector<StepField> flow_columns = {
      STEPSIM_FIELD(Flow, collective, u32), STEPSIM_FIELD(Flow, repeats, u32),
      STEPSIM_FIELD(Flow, group, u16),      STEPSIM_FIELD(Flow, kind, u16),
      STEPSIM_FIELD(Flow, stage, u32),      STEPSIM_FIELD(Flow, src_nic, u32),
      STEPSIM_FIELD(Flow, dst_nic, u32),    STEPSIM_FIELD(Flow, src_gpu, u32),
      STEPSIM_FIELD(Flow, dst_gpu, u32)};
  add_stat_columns<collective::ConnectionFlow>(flow_columns, offsetof(Flow, c));
  flow_columns.push_back(STEPSIM_FIELD(Flow, job, u32));
  const bool ok = write_table(
      file, "/flows", r.flows, flow_columns,
      "packet and cell fidelity: one row per RDMA connection direction (src NIC to dst NIC) "
      "of each distinct collective (collective: its first occurrence; repeats: how many of "
      "the step's collectives it stands for); counters of one repetition; times (ps) of the "
      "first occurrence: first post, first packet on the wire, last send completion; "
      "attributes rows_total and sample (output.flows: 1 all, K 1 in K collectives, 0 none); "
      "job: the /jobs row (0 for one job)",
      scratch);
  if (!ok) return false;
  Handle ds(H5Dopen2(file, "/flows", H5P_DEFAULT), H5Dclose);
  return ds >= 0 && attr_number(ds, "rows_total", H5T_NATIVE_UINT64, r.figures.flow_rows_total) &&
         attr_number(ds, "sample", H5T_NATIVE_UINT32, r.figures.flows_sample);
}

// /links.
bool write_links(hid_t file, const StepRows& r, ChunkScratch& scratch) {
  const hid_t u32 = H5T_NATIVE_UINT32, f64 = H5T_NATIVE_DOUBLE;
  using LinkRow = LinksRow;
  return write_table(file, "/links", r.links,
                     {STEPSIM_FIELD(LinkRow, port, u32), STEPSIM_FIELD(LinkRow, node, u32),
                      STEPSIM_FIELD(LinkRow, link, u32), STEPSIM_FIELD(LinkRow, tier, u32),
                      STEPSIM_FIELD(LinkRow, bytes, f64), STEPSIM_FIELD(LinkRow, packets, f64),
                      STEPSIM_FIELD(LinkRow, ecn_marks, f64),
                      STEPSIM_FIELD(LinkRow, pause_sent, f64), STEPSIM_FIELD(LinkRow, drops, f64),
                      STEPSIM_FIELD(LinkRow, busy_s, f64), STEPSIM_FIELD(LinkRow, paused_s, f64)},
                     "packet fidelity: per sending port over the whole step (each distinct "
                     "collective's counters times its repetitions); tier of the sending node "
                     "(0 server, 1 leaf, 2 spine, 3 core); ports that carried nothing are "
                     "left out",
                     scratch);
}

// /memory: every term of every stage's most-loaded GPU.
bool write_memory(hid_t file, const RunMeta& meta, ChunkScratch& scratch) {
  constexpr std::size_t kTerm = 32;
#pragma pack(push, 1)
  struct Mem {
    char term[kTerm];
    double bytes;
    std::uint32_t job, stage;
  };
#pragma pack(pop)
  std::vector<Mem> rows;
  rows.reserve(meta.memory.size());
  for (const MemoryRow& m : meta.memory) {
    Mem x{};
    m.term.copy(x.term, kTerm - 1);
    x.bytes = m.bytes;
    x.job = m.job;
    x.stage = m.stage;
    rows.push_back(x);
  }
  Handle text(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(text, kTerm);
  H5Tset_strpad(text, H5T_STR_NULLPAD);
  const hid_t f64 = H5T_NATIVE_DOUBLE, u32 = H5T_NATIVE_UINT32;
  return write_table(file, "/memory", rows,
                     {STEPSIM_FIELD(Mem, job, u32), STEPSIM_FIELD(Mem, stage, u32),
                      STEPSIM_FIELD(Mem, term, text), STEPSIM_FIELD(Mem, bytes, f64)},
                     "per-GPU memory model: bytes of each term (weights, gradients, "
                     "optimizer_states, activations, ...) of each pipeline stage's most-loaded "
                     "GPU; job: the /jobs row (0 for one job); a stage's total is the sum of its "
                     "rows (docs/workload.md, Memory)",
                     scratch);
}

// The file, on the writing rank.
Result<bool> write_file(const std::string& path, const RunMeta& meta, const StepRows& r,
                        const topology::Topology* topo, bool append) {
  if (std::getenv("STEPSIM_H5_ERRORS") == nullptr) H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  set_file_driver(fapl);
  errno = 0;
  Handle file(append ? H5Fopen(path.c_str(), H5F_ACC_RDWR, fapl)
                     : H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl),
              H5Fclose);
  if (file < 0) return Error{"--output: cannot create HDF5 file '" + path + "'" + io_reason()};
  errno = 0;
  const auto failed = [&path] {
    return Error{"--output: writing '" + path + "' failed" + io_reason()};
  };
  auto meta_ok = write_meta(file, meta, r, path);
  if (!meta_ok) return meta_ok.error();
  if (!*meta_ok) return failed();
  ChunkScratch scratch;  // the compressing threads' buffers, for every table
  const std::function<bool()> tables[] = {[&] { return write_ops(file, r, scratch); },
                                          [&] { return write_collectives(file, r, scratch); },
                                          [&] { return write_flows(file, r, scratch); },
                                          [&] { return write_links(file, r, scratch); },
                                          [&] { return write_jobs(file, r, scratch); },
                                          [&] { return write_memory(file, meta, scratch); }};
  for (const auto& table : tables) {
    if (!table()) return failed();
  }
  if (topo != nullptr && !append) {
    if (auto names = write_name_tables(file, *topo); !names) {
      return Error{"--output: writing '" + path + "' failed: " + names.error().message};
    }
  }
  if (H5Fflush(file, H5F_SCOPE_GLOBAL) < 0) return failed();
  return true;
}

}  // namespace

Result<bool> write_step_h5(const std::string& path, const RunMeta& meta, const StepRows& r,
                           MPI_Comm comm, const topology::Topology* topo, bool append) {
  Result<bool> mine = true;
  if (comm_rank(comm) == 0) mine = write_file(path, meta, r, topo, append);
  return agree_with_writer(mine, comm);
}

}  // namespace stepsim::output
