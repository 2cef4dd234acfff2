#include "src/plan/layout_space.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "stepsim/workload/pipeline_layout.hpp"

namespace stepsim::plan {
namespace {

std::vector<int> divisors(int n) {
  std::vector<int> d;
  for (int k = 1; k <= n; ++k) {
    if (n % k == 0) d.push_back(k);
  }
  return d;
}

// validate()'s rule: the layers over pv virtual stages evenly or the first and last one short;
// with an uneven first/last stage, the rest a positive multiple of the other stages.
bool layers_split(int layers, int pv, int first, int last) {
  if (first > 0 || last > 0) {
    const int fixed = (first > 0 ? 1 : 0) + (last > 0 ? 1 : 0);
    const int rest = layers - first - last;
    return pv > fixed && rest >= pv - fixed && rest % (pv - fixed) == 0;
  }
  return layers >= pv && pv * ((layers + pv - 1) / pv) - layers <= 2;
}

// The DP-dependent choices of one (tp, cp, pp, vpp): EP, micro-batch, ZeRO, recompute, overlap.
void add_inner(const workload::Scenario& s, const SpaceOptions& o, Layout base,
               std::vector<Layout>& out) {
  const workload::ModelSpec& m = s.model;
  // EP under Megatron's MoE parallel folding: etp x ep divides tp cp dp; expert TP tp (0) or,
  // with TP, 1.
  std::vector<std::pair<int, int>> eps{{1, 0}};
  if (m.experts > 0) {
    eps.clear();
    for (int etp : {0, 1}) {
      if (etp == 1 && base.tp == 1) continue;
      const int et = etp > 0 ? etp : base.tp;
      for (int e : divisors(m.experts)) {
        if ((base.tp * base.cp * base.dp) % (et * e) == 0) eps.emplace_back(e, etp);
      }
    }
  }
  for (std::int64_t gb : o.global_batches) {
    base.global_batch = gb;
    for (std::int64_t mb : o.micro_batch) {
      if (gb % (mb * base.dp) != 0) continue;
      const std::int64_t mbs = gb / (mb * base.dp);
      if (base.vpp > 1 && mbs % base.pp != 0) continue;
      base.micro_batch = mb;
      for (const auto& [ep, etp] : eps) {
        base.ep = ep;
        base.etp = etp;
        for (int z : o.zero) {
          base.zero = z;
          for (const std::string& rc : o.recompute) {
            base.recompute = rc;
            base.tp_overlap = false;
            out.push_back(base);
            if (base.tp > 1 && s.par.sequence_parallel) {
              base.tp_overlap = true;
              out.push_back(base);
            }
          }
        }
      }
    }
  }
}

}  // namespace

std::string layout_text(const Layout& l) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "tp%d pp%d vpp%d cp%d ep%d dp%d mb%lld z%d %s%s", l.tp, l.pp,
                l.vpp, l.cp, l.ep, l.dp, static_cast<long long>(l.micro_batch), l.zero,
                l.recompute.c_str(), l.tp_overlap ? " ovl" : "");
  std::string text = buf;
  if (l.etp > 0 && l.etp != l.tp) text += " etp" + std::to_string(l.etp);
  return text;
}

Layout layout_of(const workload::Parallelism& p) {
  Layout l;
  l.tp = p.tp;
  l.pp = p.pp;
  l.vpp = p.vpp;
  l.cp = p.cp;
  l.ep = p.ep;
  l.etp = p.etp;
  l.dp = p.data_parallel();
  l.micro_batch = p.micro_batch;
  l.global_batch = p.global_batch;
  l.zero = p.zero;
  l.recompute = p.recompute;
  l.tp_overlap = p.tp_overlap && p.tp > 1;
  l.first_stage_layers = p.first_stage_layers;
  l.last_stage_layers = p.last_stage_layers;
  l.pipeline_layout = p.layout;
  return l;
}

void apply_layout(const Layout& l, workload::Scenario& s) {
  workload::Parallelism& p = s.par;
  p.tp = l.tp;
  p.pp = l.pp;
  p.vpp = l.vpp;
  p.cp = l.cp;
  p.ep = l.ep;
  p.etp = l.etp;
  p.dp = l.dp;
  p.gpus = l.tp * l.pp * l.cp * l.dp;
  p.micro_batch = l.micro_batch;
  p.global_batch = l.global_batch;
  p.zero = l.zero;
  p.recompute = l.recompute;
  p.tp_overlap = l.tp_overlap;
  p.first_stage_layers = l.first_stage_layers;
  p.last_stage_layers = l.last_stage_layers;
  p.layout = l.pipeline_layout;
}

std::vector<Layout> enumerate_layouts(const workload::Scenario& s, const SpaceOptions& o) {
  const workload::ModelSpec& m = s.model;
  std::vector<Layout> out;
  // The scenario's parallel.layout fits the layouts with its count of virtual stages.
  int layout_stages = 0;
  if (auto v = workload::parse_pipeline_layout(s.par.layout); !s.par.layout.empty() && v) {
    layout_stages = static_cast<int>(v->size());
  }
  // The largest TP first: a search stopped early (SIGTERM, a time limit) has then looked at the
  // sizes that win for large models, not only TP 1 and 2.
  std::vector<int> tps = divisors(o.nvlink);
  std::reverse(tps.begin(), tps.end());
  for (int tp : tps) {
    if (m.heads % tp != 0 || o.gpus % tp != 0) continue;
    for (int cp : o.cp) {
      if (m.seq_len % cp != 0 || o.gpus % (tp * cp) != 0) continue;
      for (int pp : divisors(o.gpus / (tp * cp))) {
        for (int vpp : o.vpp) {
          if (vpp > 1 && pp == 1) continue;
          Layout l;
          l.tp = tp;
          l.cp = cp;
          l.pp = pp;
          l.vpp = vpp;
          l.dp = o.gpus / (tp * cp * pp);
          // The scenario's uneven first/last stage where it still splits, else even.
          const int first = s.par.first_stage_layers;
          const int last = s.par.last_stage_layers;
          if (layout_stages == pp * vpp) {
            l.pipeline_layout = s.par.layout;
          } else if ((first > 0 || last > 0) && layers_split(m.layers, pp * vpp, first, last)) {
            l.first_stage_layers = first;
            l.last_stage_layers = last;
          } else if (!layers_split(m.layers, pp * vpp, 0, 0)) {
            continue;
          }
          add_inner(s, o, l, out);
        }
      }
    }
  }
  return out;
}

}  // namespace stepsim::plan
