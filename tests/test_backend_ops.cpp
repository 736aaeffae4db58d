// Every op of the Backend interface (core/compute/backend.h) on every available backend, against
// the CPU backend on one thread and a plain double-precision reference: the one case list of
// backend_checks.h as Qt Test rows "backend/case", one per backend and case ("cpu2t/linear rows=7
// in=13 out=5 bias=1"). The CPU backend also runs on 2 and 3 threads (its work split into tasks,
// shapes that do not divide evenly). Backends that are not available here (no CUDA device) are
// skipped with the reason, never passed. The same checks run without Qt in backend_checks_main.cpp.
#include <QtTest>
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

  // Every case of checks::opCases() on every backend: the rows come from the one case list.
  void ops_data() {
    QTest::addColumn<QString>("backendName");
    QTest::addColumn<int>("which");  // the case's place in checks::opCases()
    const std::vector<checks::OpCase>& cases = checks::opCases();
    for (const char* backend : {"cpu", "cpu2t", "cpu3t", "cuda"})
      for (size_t i = 0; i < cases.size(); ++i)
        QTest::newRow((std::string(backend) + "/" + cases[i].name).c_str())
            << QString(backend) << int(i);
  }

  void ops() {
    QFETCH(QString, backendName);
    QFETCH(int, which);
    Backend* be = backend(backendName);
    if (!be) QSKIP(qPrintable(backendName + " backend unavailable: " + unavailable(backendName)));
    const checks::Outcome o = checks::runCase(checks::opCases()[size_t(which)], *be, *cpu_);
    if (o.status == checks::Status::Skip) QSKIP(o.message.c_str());
    if (o.status == checks::Status::Fail) QFAIL(o.message.c_str());
  }
};

QTEST_APPLESS_MAIN(TestBackendOps)
#include "test_backend_ops.moc"
