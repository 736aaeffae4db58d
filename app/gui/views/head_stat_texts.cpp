#include "views/head_stat_texts.h"

#include <QObject>
#include <QtGlobal>
#include <array>

namespace attnviz::gui {

namespace {

std::array<HeadStatText, kHeadStatCount> makeTexts() {
  const QString share = QObject::tr("share of attention, 0–1");
  std::array<HeadStatText, kHeadStatCount> t = {{
      {HeadStat::Entropy, QObject::tr("Entropy"), QObject::tr("Entropy"), QObject::tr("nats"),
       QObject::tr("Mean over query rows of −Σ p ln p, in nats: 0 = all attention on one key")},
      {HeadStat::EntropyNorm, QObject::tr("Entropy 0–1"), QObject::tr("Entropy 0–1"), QString(),
       QObject::tr("Entropy divided by ln(number of unmasked keys): 0 = one key, 1 = spread "
                   "evenly")},
      {HeadStat::Diagonal, QObject::tr("Diagonal"), QObject::tr("Diagonal"), share,
       QObject::tr("Mean attention of position i on itself (self-attention)")},
      {HeadStat::Previous, QObject::tr("Previous"), QObject::tr("Previous token"), share,
       QObject::tr("Mean attention of position i on position i − 1 (self-attention)")},
      {HeadStat::First, QObject::tr("First"), QObject::tr("First token"), share,
       QObject::tr("Mean attention on the first key")},
      {HeadStat::Bos, QObject::tr("BOS"), QObject::tr("BOS"), share,
       QObject::tr("Mean attention on the start token among the keys (an attention sink)")},
      {HeadStat::Eos, QObject::tr("EOS"), QObject::tr("EOS"), share,
       QObject::tr("Mean attention on the end token among the keys (an attention sink)")},
      {HeadStat::Padding, QObject::tr("Padding"), QObject::tr("Padding"), share,
       QObject::tr("Mean attention on padding keys (0 while the padding mask is on)")},
      {HeadStat::Distance, QObject::tr("Distance"), QObject::tr("Mean distance"),
       QObject::tr("positions"),
       QObject::tr("Mean |i − j| weighted by the attention (self-attention): how far the head "
                   "looks")},
      {HeadStat::Monotonicity, QObject::tr("Monotonic"), QObject::tr("Monotonic alignment"),
       QObject::tr("Kendall's τ, −1…1"),
       QObject::tr("Cross-attention: Kendall's τ between the query position and the attention's "
                   "centre: +1 reads the source in order, −1 in reverse")},
  }};
  return t;
}

}  // namespace

const HeadStatText& headStatText(HeadStat stat) {
  static const std::array<HeadStatText, kHeadStatCount> texts = makeTexts();
  const HeadStatText& t = texts[size_t(stat)];
  Q_ASSERT(t.stat == stat);  // the entries in kHeadStats's order
  return t;
}

}  // namespace attnviz::gui
