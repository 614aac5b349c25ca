// LibTorch's binaries are built with NDEBUG and at::RecordFunction's layout depends on it (a
// member that exists only without NDEBUG), so its inline accessors must be compiled with NDEBUG
// here whatever the project's build type. This file is excluded from the precompiled header
// (core/planner/CMakeLists.txt) so that the definition below comes before any LibTorch header.
#ifndef NDEBUG
#define NDEBUG
#endif

#include "core/planner/op_observer.h"

#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>

#include <memory>

namespace pm {

bool ObservedOp::aliases() const {
  for (const auto& o : outputs)
    for (const auto& i : inputs)
      if (o.storage != nullptr && o.storage == i.storage) return true;
  return false;
}

int64_t ObservedOp::outputBytes() const {
  int64_t b = 0;
  for (const auto& o : outputs) b += o.bytes;
  return b;
}

int64_t ObservedOp::outputNumel() const {
  int64_t n = 0;
  for (const auto& o : outputs) n += o.numel;
  return n;
}

namespace {

ObservedTensor infoOf(const at::Tensor& t) {
  ObservedTensor i;
  if (t.has_storage()) i.storage = t.storage().unsafeGetStorageImpl();
  i.shape = t.sizes().vec();
  i.numel = t.numel();
  i.bytes = t.numel() * static_cast<int64_t>(t.element_size());
  return i;
}

void collect(const c10::IValue& v, std::vector<ObservedTensor>& out) {
  if (v.isTensor()) {
    if (v.toTensor().defined()) out.push_back(infoOf(v.toTensor()));
  } else if (v.isTensorList()) {
    const auto list = v.toTensorList();
    for (size_t k = 0; k < list.size(); ++k) {
      const at::Tensor t = list.get(k);
      if (t.defined()) out.push_back(infoOf(t));
    }
  }
}

struct OpContext : at::ObserverContext {
  ObservedOp op;
};

thread_local std::vector<ObservedOp>* tlsOps = nullptr;
thread_local int tlsDepth = 0;

std::unique_ptr<at::ObserverContext> onStart(const at::RecordFunction& fn) {
  ++tlsDepth;
  if (tlsDepth != 1 || tlsOps == nullptr) return nullptr;
  auto ctx = std::make_unique<OpContext>();
  ctx->op.name = fn.name();
  for (const auto& v : fn.inputs()) collect(v, ctx->op.inputs);
  return ctx;
}

void onEnd(const at::RecordFunction& fn, at::ObserverContext* c) {
  --tlsDepth;
  auto* ctx = dynamic_cast<OpContext*>(c);
  if (ctx == nullptr || tlsOps == nullptr) return;
  for (const auto& v : fn.outputs()) collect(v, ctx->op.outputs);
  tlsOps->push_back(std::move(ctx->op));
}

class Installed {
 public:
  explicit Installed(std::vector<ObservedOp>& ops) {
    tlsOps = &ops;
    tlsDepth = 0;
    handle_ = at::addThreadLocalCallback(at::RecordFunctionCallback(&onStart, &onEnd)
                                             .needsInputs(true)
                                             .needsOutputs(true)
                                             .scopes({at::RecordScope::FUNCTION}));
  }
  ~Installed() {
    at::removeCallback(handle_);
    tlsOps = nullptr;
    tlsDepth = 0;
  }
  Installed(const Installed&) = delete;
  Installed& operator=(const Installed&) = delete;

 private:
  at::CallbackHandle handle_ = at::INVALID_CALLBACK_HANDLE;
};

}  // namespace

std::vector<ObservedOp> observeOps(const std::function<void()>& fn) {
  std::vector<ObservedOp> ops;
  {
    Installed observer(ops);
    fn();
  }
  return ops;
}

}  // namespace pm
