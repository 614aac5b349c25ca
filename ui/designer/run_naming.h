#pragma once
// The name, tags and notes of a run started from a design edited in the Design tab, so that the
// variants run from one preset are told apart in the Runs tab: the name says what the design is
// (model, stages, microbatches, schedule), the tags follow its schedule and model, the notes say
// which preset it came from and what was edited. Qt-free (tests/ui/designer_edit_test.cpp).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pm::ui {

// "cnn P=2 N=8 pipemare T1+T2 warm-up=1": the design's model (a TorchScript file's name without
// its extension), pipeline.stages, pipeline.microbatches and pipeline.schedule; with pipemare,
// which of T1 and T2 are on and the synchronous warm-up epochs when there are any.
std::string designRunName(const nlohmann::json& design);

// `tags` kept where they still describe the design: a tag that names a schedule or a model other
// than the design's is dropped ("gpipe" on a pipemare run), as is "multi-process" on a run in one
// process and "single-process" on one in several; then the design's schedule and model added
// when missing. Order kept, no tag twice.
std::vector<std::string> designRunTags(const std::vector<std::string>& tags, const nlohmann::json& design);

struct RunIdentity {
  std::string name;
  std::vector<std::string> tags;
  std::string notes;
};

// The run of `design` (as the run reads it, every section present), edited from `source` (the
// design as opened from `file`, or the defaults when `file` is empty); `edits`: the fields changed,
// as "path=value". A name or tags the user edited in the design are the user's (tags still gain the
// schedule and model); otherwise they are derived as above. The notes: "From preset NAME (file
// FILE); edited: EDITS", after the design's notes when the user edited those.
RunIdentity editedRunIdentity(const nlohmann::json& design, const nlohmann::json& source, const std::string& file,
                              const std::vector<std::string>& edits);

}  // namespace pm::ui
