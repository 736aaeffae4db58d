// Every op of the Backend interface (core/compute/backend.h) on every available backend, against
// the CPU backend on one thread and a plain double-precision reference: the checks of
// backend_checks.h as Qt Test rows, one per backend and case. The CPU backend also runs on 2 and 3
// threads (its work split into tasks, shapes that do not divide evenly). Backends that are not
// available here (no CUDA device) are skipped with the reason, never passed. The same checks run
// without Qt in backend_checks_main.cpp.
#include <QtTest>
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend_checks.h"
#include "base/error.h"
#include "compute/backend.h"
#include "compute/backends.h"
#include "compute/cpu_backend.h"

using namespace attnviz;

namespace {

const checks::OpCheck& opCheck(const std::string& op) {
  for (const checks::OpCheck& c : checks::opChecks())
    if (c.op == op) return c;
  throw std::logic_error("no op check named " + op);
}

// Rows "backend/case" for every backend name and case of the op.
void addRows(const std::string& op) {
  QTest::addColumn<QString>("backendName");
  QTest::addColumn<int>("which");
  const std::vector<std::string>& cases = opCheck(op).cases;
  for (const char* backend : {"cpu", "cpu2t", "cpu3t", "cuda"})
    for (size_t i = 0; i < cases.size(); ++i)
      QTest::newRow((std::string(backend) + "/" + cases[i]).c_str()) << QString(backend) << int(i);
}

}  // namespace

// Fetches the row's backend into `be`, or skips the row saying why that backend is unavailable.
#define FETCH_BACKEND(be)             \
  QFETCH(QString, backendName);       \
  QFETCH(int, which);                 \
  Backend* be = backend(backendName); \
  if (!be) QSKIP(qPrintable(backendName + " backend unavailable: " + unavailable(backendName)));

// One op's slots: OP_data() lists the rows, OP() runs the row's case of checks::opChecks().
#define OP_CHECK(op)                                                            \
  void op##_data() {                                                            \
    addRows(#op);                                                               \
  }                                                                             \
  void op() {                                                                   \
    FETCH_BACKEND(be);                                                          \
    const checks::Outcome o = checks::runCase(opCheck(#op), *be, *cpu_, which); \
    if (o.status == checks::Status::Skip) QSKIP(o.message.c_str());             \
    if (o.status == checks::Status::Fail) QFAIL(o.message.c_str());             \
  }

class TestBackendOps : public QObject {
  Q_OBJECT

 private:
  std::shared_ptr<Backend> cpu_;
  std::map<QString, std::shared_ptr<Backend>> backends_;
  std::map<QString, QString> why_;

  Backend* backend(const QString& name) {
    auto it = backends_.find(name);
    return it == backends_.end() ? nullptr : it->second.get();
  }
  QString unavailable(const QString& name) { return why_.count(name) ? why_[name] : "unknown"; }

 private slots:
  void initTestCase() {
    cpu_ = makeCpuBackend(1);
    QCOMPARE(cpu_->threads(), 1);
    backends_["cpu"] = cpu_;
    for (int n : {2, 3}) {
      auto be = makeCpuBackend(n);
      QCOMPARE(be->threads(), n);
      backends_[QString("cpu%1t").arg(n)] = be;
    }
    const std::string reason = cudaUnavailableReason();
    if (reason.empty()) {
      try {
        backends_["cuda"] = createBackend("cuda");
      } catch (const Error& e) {
        why_["cuda"] = e.what();
      }
    } else {
      why_["cuda"] = QString::fromStdString(reason);
    }
    for (const auto& [name, be] : backends_)
      qInfo("%s: %s", qPrintable(name), be->description().c_str());
    for (const auto& [name, why] : why_)
      qInfo("%s: unavailable: %s", qPrintable(name), qPrintable(why));
  }

  OP_CHECK(memory)
  OP_CHECK(embedding)
  OP_CHECK(embedding_backward)
  OP_CHECK(gather_add)
  OP_CHECK(gather_add_backward)
  OP_CHECK(mean_pool)
  OP_CHECK(mean_pool_backward)
  OP_CHECK(linear)
  OP_CHECK(linear_backward)
  OP_CHECK(scores)
  OP_CHECK(scores_backward)
  OP_CHECK(softmax)
  OP_CHECK(softmax_backward)
  OP_CHECK(context)
  OP_CHECK(context_backward)
  OP_CHECK(layernorm)
  OP_CHECK(layernorm_backward)
  OP_CHECK(activation)
  OP_CHECK(activation_backward)
  OP_CHECK(residual)
  OP_CHECK(scale)
  OP_CHECK(elementwise_backward)  // residual_backward, scale_backward, zero
  OP_CHECK(dropout)
  OP_CHECK(cross_entropy)
  OP_CHECK(optimizer_ops)  // sum_squares, adamw_update

  // Every op check of backend_checks.h has its slots above.
  void everyOpListed() {
    const std::vector<std::string> listed{"memory",
                                          "embedding",
                                          "embedding_backward",
                                          "gather_add",
                                          "gather_add_backward",
                                          "mean_pool",
                                          "mean_pool_backward",
                                          "linear",
                                          "linear_backward",
                                          "scores",
                                          "scores_backward",
                                          "softmax",
                                          "softmax_backward",
                                          "context",
                                          "context_backward",
                                          "layernorm",
                                          "layernorm_backward",
                                          "activation",
                                          "activation_backward",
                                          "residual",
                                          "scale",
                                          "elementwise_backward",
                                          "dropout",
                                          "cross_entropy",
                                          "optimizer_ops"};
    for (const checks::OpCheck& c : checks::opChecks())
      QVERIFY2(std::find(listed.begin(), listed.end(), c.op) != listed.end(), c.op.c_str());
  }
};

QTEST_APPLESS_MAIN(TestBackendOps)
#include "test_backend_ops.moc"
