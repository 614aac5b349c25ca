#include "core/pipeline/training_method.h"

#include <stdexcept>

namespace pm {

std::string TrainingMethod::name() const {
  std::string n = decl().name;
  if (recompute) n += "+recompute";
  if (t1) n += "+T1";
  if (t2) n += "+T2";
  return n;
}

TrainingMethod trainingMethodFromName(const std::string& name) {
  const size_t plus = name.find('+');
  const std::string schedule = name.substr(0, plus);
  TrainingMethod m;
  bool found = false;
  for (const auto& d : scheduleDecls())
    if (schedule == d.name) {
      m.schedule = d.kind;
      found = true;
    }
  if (!found) throw std::invalid_argument("unknown schedule '" + schedule + "' in training method '" + name + "'");
  for (size_t at = plus; at != std::string::npos;) {
    const size_t next = name.find('+', at + 1);
    const std::string v = name.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
    if (v == "recompute") m.recompute = true;
    else if (v == "T1" || v == "t1") m.t1 = true;
    else if (v == "T2" || v == "t2") m.t2 = true;
    else throw std::invalid_argument("unknown variant '" + v + "' in training method '" + name + "' (expected recompute, T1 or T2)");
    at = next;
  }
  if ((m.t1 || m.t2) && !m.decl().takesPipeMare)
    throw std::invalid_argument("training method '" + name + "': T1 and T2 apply only to " +
                                scheduleNamesWhere([](const ScheduleDecl& d) { return d.takesPipeMare; }));
  return m;
}

TrainingMethod trainingMethodAmong(const std::string& name, const std::vector<TrainingMethod>& among) {
  TrainingMethod m;
  try {
    m = trainingMethodFromName(name);
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument("unknown schedule '" + name + "' (expected one of: " + trainingMethodNames(among) + ")");
  }
  for (const auto& x : among)
    if (x == m) return x;
  throw std::invalid_argument("unknown schedule '" + name + "' (expected one of: " + trainingMethodNames(among) + ")");
}

const std::vector<TrainingMethod>& planMethods() {
  static const std::vector<TrainingMethod> rows = [] {
    std::vector<TrainingMethod> r;
    for (const auto& d : scheduleDecls()) {
      r.push_back({d.kind});
      if (d.kind == ScheduleKind::GPipe) r.push_back({d.kind, /*recompute=*/true});
      if (d.takesPipeMare) r.push_back({d.kind, false, false, /*t2=*/true});
    }
    return r;
  }();
  return rows;
}

const std::vector<TrainingMethod>& stabilityMethods() {
  static const std::vector<TrainingMethod> rows = [] {
    std::vector<TrainingMethod> r;
    // Chunked schedules compute gpipe's update: their edge is gpipe's row.
    for (const auto& d : scheduleDecls())
      if (d.chunks == 1) r.push_back({d.kind});
    for (const auto& d : scheduleDecls())
      if (d.takesPipeMare) r.push_back({d.kind, false, /*t1=*/true});
    return r;
  }();
  return rows;
}

TrainingMethod stabilityMethodOf(const TrainingMethod& method) {
  // Several chunks per rank change where the work runs, not the update: gpipe's row.
  if (method.decl().chunks != 1) return TrainingMethod{ScheduleKind::GPipe};
  return TrainingMethod{method.schedule, false, method.t1 && method.decl().takesPipeMare};
}

TrainingMethod probeMethodOf(const TrainingMethod& method) {
  if (method.decl().chunks != 1 || method.decl().synchronous) return TrainingMethod{ScheduleKind::GPipe};
  TrainingMethod r = method;
  r.recompute = false;
  if (!r.decl().takesPipeMare) r.t1 = r.t2 = false;
  return r;
}

std::string trainingMethodNames(const std::vector<TrainingMethod>& methods) {
  std::string list;
  for (const auto& m : methods) list += (list.empty() ? "" : ", ") + m.name();
  return list;
}

}  // namespace pm
