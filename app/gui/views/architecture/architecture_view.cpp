#include "views/architecture/architecture_view.h"

#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QScrollArea>
#include <QSplitter>
#include <QTimer>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "arch/weights.h"
#include "base/error.h"
#include "model/runs.h"
#include "session/attention_data.h"
#include "session/teaching_util.h"
#include "widgets/heatmap.h"

namespace attnviz::gui {

namespace {

constexpr double kColumnWidth = 250;
constexpr double kBlockHeight = 34;
constexpr double kGap = 22;
constexpr double kFramePad = 10;
constexpr double kSideMargin = 110;  // room for "N×" and the layer chooser
constexpr double kMiddle = 150;      // between the columns: the memory arrow and residuals
constexpr double kMinScale = 0.72;   // below this the text is too small: the view scrolls instead

using Type = ArchBlock::Type;

QColor fillOf(Type t) {
  switch (t) {
    case Type::Attention:
      return QColor(0xfd, 0xdc, 0xb5);
    case Type::AddNorm:
    case Type::Norm:
    case Type::Add:
      return QColor(0xf3, 0xef, 0xa9);
    case Type::FeedForward:
      return QColor(0xc6, 0xe5, 0xf5);
    case Type::Embedding:
      return QColor(0xf8, 0xd1, 0xd9);
    case Type::Positional:
      return QColor(0xff, 0xff, 0xff);
    case Type::Linear:
    case Type::Pool:
      return QColor(0xdc, 0xd4, 0xf2);
    case Type::Softmax:
      return QColor(0xcd, 0xea, 0xc4);
    case Type::Tokens:
    case Type::Output:
      return QColor(0xf2, 0xf2, 0xf2);
  }
  return Qt::white;
}

// "[1, 7, 128]" with the numbers known, the letters where not.
QString shape(const ArchShapes& s, std::initializer_list<QString> dims) {
  QStringList out;
  for (const QString& d : dims) {
    if (d == QLatin1String("B"))
      out << (s.B > 0 ? QString::number(s.B) : d);
    else if (d == QLatin1String("S"))
      out << (s.B > 0 ? QString::number(s.S) : d);
    else if (d == QLatin1String("T"))
      out << (s.B > 0 ? QString::number(s.T) : d);
    else
      out << d;
  }
  return QStringLiteral("[%1]").arg(out.join(QStringLiteral(", ")));
}

QString activationText(Activation a) {
  switch (a) {
    case Activation::Relu:
      return QStringLiteral("ReLU");
    case Activation::Gelu:
      return QStringLiteral("GELU");
    case Activation::GeluTanh:
      return QStringLiteral("GELU (tanh)");
    case Activation::Silu:
      return QStringLiteral("SiLU");
    case Activation::Tanh:
      return QStringLiteral("tanh");
  }
  return {};
}

// One column of the figure, built from the bottom up (y decreases; the layout is shifted at the
// end so that it starts at 0).
struct Column {
  ArchLayout* L;
  Side side;
  double x;
  double top = 0;
  int last = -1;

  double cx() const { return x + kColumnWidth / 2; }
  int add(ArchBlock b, const QString& shape_below, double extra_gap = 0) {
    const double y = last < 0 ? top - kBlockHeight : top - kGap - extra_gap - kBlockHeight;
    b.rect = QRectF(x, y, kColumnWidth, kBlockHeight);
    b.side = side;
    if (last >= 0) {
      ArchArrow a;
      const double y0 = L->blocks[size_t(last)].rect.top(), y1 = b.rect.bottom();
      a.path << QPointF(cx(), y0) << QPointF(cx(), y1);
      a.shape = shape_below;
      a.label_at = QPointF(cx() + 7, y1 + 0.4 * (y0 - y1));
      L->arrows.push_back(a);
    }
    L->blocks.push_back(std::move(b));
    last = int(L->blocks.size()) - 1;
    top = y;
    return last;
  }
  // A residual connection from the stream entering block `enter` around to the side of block
  // `add` (the encoder's on the left, the decoder's on the right).
  void residual(int enter, int add) {
    const QRectF e = L->blocks[size_t(enter)].rect, a = L->blocks[size_t(add)].rect;
    const QRectF below = L->blocks[size_t(enter - 1)].rect;  // the block the stream comes from
    const double by = e.bottom() + 0.8 * (below.top() - e.bottom());  // under the shape label
    const bool left = side == Side::Source;
    const double xo = left ? x - 18 : x + kColumnWidth + 18;
    ArchArrow r;
    r.residual = true;
    r.path << QPointF(cx(), by) << QPointF(xo, by) << QPointF(xo, a.center().y())
           << QPointF(left ? a.left() : a.right(), a.center().y());
    L->arrows.push_back(r);
  }
};

ArchBlock block(const QString& id, Type type, const QString& label, const QString& detail,
                const QString& tooltip) {
  ArchBlock b;
  b.id = id;
  b.type = type;
  b.label = label;
  b.detail = detail;
  b.tooltip = tooltip;
  return b;
}

ArchBlock sublayerBlock(ArchBlock b, int layer, Sublayer s) {
  b.layer = layer;
  b.has_sublayer = true;
  b.sublayer = s;
  return b;
}

// The model's norm by name ("Layer norm", "RMSNorm"), and what it does to a position's vector.
QString normName(const ModelConfig& c) {
  return c.norm_kind == NormKind::RmsNorm ? QObject::tr("RMSNorm") : QObject::tr("Layer norm");
}
QString normWhat(const ModelConfig& c) {
  switch (c.norm_kind) {
    case NormKind::RmsNorm:
      return QObject::tr(
          "divides each position's vector by its root mean square, then scales it "
          "(no centring, no shift)");
    case NormKind::LayerNormStd:
      return QObject::tr(
          "subtracts each position's mean and divides by its standard deviation "
          "(unbiased, with ε added to it: the Annotated Transformer's LayerNorm), "
          "then scales and shifts it");
    case NormKind::LayerNorm:
      break;
  }
  return QObject::tr(
      "normalises each position's vector to mean 0 and variance 1, then scales "
      "and shifts it");
}

// The tokens of a side, embeddings, positions and the embedding norm; returns the shape of the
// stream it leaves.
void addEmbedding(Column& col, const ModelConfig& c, const ArchShapes& sh, const QString& p,
                  const QString& len) {
  const bool src = col.side == Side::Source;
  const bool decoder_only = !c.hasEncoder();
  QString tokens_label = src ? QObject::tr("Inputs")
                             : (decoder_only ? QObject::tr("Inputs (the prompt)")
                                             : QObject::tr("Outputs (shifted right)"));
  const QString words = src ? sh.src_words : sh.tgt_words;
  col.add(block(p + ".tokens", Type::Tokens, tokens_label,
                words.isEmpty() ? QObject::tr("token ids %1").arg(shape(sh, {"B", len})) : words,
                src ? QObject::tr("The source sentence as token ids, one per position.")
                    : QObject::tr("The target so far, starting with the start token: position t "
                                  "predicts the token at t + 1.")),
          {});
  QString emb =
      src || decoder_only ? QObject::tr("Input embedding") : QObject::tr("Output embedding");
  if (c.embed_scale) emb += QStringLiteral(" × √d_model");
  if (src && c.n_segments > 0) emb += QObject::tr(" + segment");
  ArchBlock e =
      block(p + ".embedding", Type::Embedding, emb,
            QObject::tr("a learned row of %1 numbers per id").arg(c.d_model),
            QObject::tr("Looks up a learned vector of d_model = %1 numbers for every "
                        "token id%2 — click to see the vectors of this sentence.")
                .arg(c.d_model)
                .arg(c.embed_scale ? QObject::tr(", multiplied by √d_model") : QString()));
  col.add(sublayerBlock(e, -1, Sublayer::Embedding), shape(sh, {"B", len}));
  const bool learned = c.positional == Positional::Learned;
  const bool rotary = c.positional == Positional::Rotary;
  const bool relative = c.positional == Positional::Relative;
  col.add(
      block(p + ".positional", Type::Positional,
            relative  ? QObject::tr("Relative position bias (inside attention)")
            : rotary  ? QObject::tr("Rotary positions (inside attention)")
            : learned ? QObject::tr("+ Positional encoding (learned table)")
                      : QObject::tr("+ Positional encoding (sinusoids)"),
            relative ? QObject::tr("nothing added here · %1 buckets").arg(c.relative_buckets)
            : rotary ? QObject::tr("nothing added here · rope_theta = %1").arg(c.rope_theta)
                     : QObject::tr("added to every position"),
            relative  ? QObject::tr("T5's relative position bias adds nothing to the token "
                                     "vectors: each head adds a learned number for the bucket of "
                                     "the offset between key and query to their score, before the "
                                     "mask. The Positional encoding view shows each head's bias.")
            : rotary  ? QObject::tr("Rotary position embeddings (RoPE) add nothing to the token "
                                     "vectors: inside every attention block each head's queries "
                                     "and keys are rotated by an angle that grows with their "
                                     "position, so a score depends on how far apart two tokens "
                                     "are. The Positional encoding view shows the rotations.")
            : learned ? QObject::tr("Adds a learned vector for each position, so that attention "
                                    "can tell word order.")
                      : QObject::tr("Adds sines and cosines of the position at d_model / 2 "
                                    "frequencies, so that attention can tell word order.")),
      shape(sh, {"B", len, QString::number(c.d_model)}));
  if (c.embed_norm)
    col.add(block(p + ".embed_norm", Type::Norm, normName(c), {},
                  QObject::tr("Over the embeddings: %1.").arg(normWhat(c))),
            shape(sh, {"B", len, QString::number(c.d_model)}));
}

QString attentionTip(AttentionKind k) {
  switch (k) {
    case AttentionKind::EncoderSelf:
      return QObject::tr(
          "Every position makes a query, a key and a value; each head mixes the "
          "values of all positions weighted by softmax(QKᵀ/√d_k) — click to open "
          "this layer's attention.");
    case AttentionKind::DecoderSelf:
      return QObject::tr(
          "Self-attention over the target in which the look-ahead mask hides later "
          "positions, so each position sees only itself and earlier ones — click to "
          "open it.");
    case AttentionKind::Cross:
      return QObject::tr(
          "Queries from the decoder, keys and values from the encoder's output: "
          "where each target position reads the source — click to open it.");
  }
  return {};
}

// The projections of an attention block, with grouped-query attention's fewer key/value heads and
// rotary positions' turn of the queries and keys.
QString projectionsTip(const ModelConfig& c, AttentionKind kind, const ArchShapes& sh,
                       const QString& len, const QString& kv_len) {
  QString tip =
      QObject::tr(
          "\n\nW_Q makes %1 query heads: Q %2; W_K and W_V make %3 key/value heads: K %4, "
          "V %5.")
          .arg(c.n_heads)
          .arg(shape(sh, {"B", QString::number(c.n_heads), len, QString::number(c.d_k)}))
          .arg(c.kvHeads())
          .arg(shape(sh, {"B", QString::number(c.kvHeads()), kv_len, QString::number(c.d_k)}))
          .arg(shape(sh, {"B", QString::number(c.kvHeads()), kv_len, QString::number(c.d_v)}));
  if (const QString groups = kvHeadsSummary(c); !groups.isEmpty())
    tip += QObject::tr(" %1: %2.").arg(groups, kvGroupsText(c));
  if (c.positional == Positional::Rotary && kind != AttentionKind::Cross)  // as Pass does
    tip += QObject::tr(" Before QKᵀ, every query and key is rotated by its position (RoPE).");
  return tip;
}

QString attentionLabel(const ModelConfig& c, const QString& prefix) {
  const QString kind = c.kvHeads() == c.n_heads ? QObject::tr("multi-head attention")
                       : c.kvHeads() == 1       ? QObject::tr("multi-query attention")
                                                : QObject::tr("grouped-query attention");
  return prefix.isEmpty() ? kind.left(1).toUpper() + kind.mid(1) : prefix + QLatin1Char(' ') + kind;
}

// One layer of a stack, drawn once; returns the index of its top block.
void addLayer(Column& col, const ModelConfig& c, const ArchShapes& sh, const QString& p,
              const QString& len, int layer, ArchFrame* frame) {
  const bool pre = c.norm == NormPlacement::Pre;
  const QString d = QString::number(c.d_model);
  const QString stream = shape(sh, {"B", len, d});
  const bool enc = col.side == Side::Source;
  double extra = kFramePad;  // the first block keeps clear of the frame
  const double frame_bottom = col.L->blocks[size_t(col.last)].rect.top() - 3;
  auto sub = [&](AttentionKind kind, const QString& name, Sublayer s, Sublayer ns,
                 const QString& label) {
    const QString kv_len = kind == AttentionKind::Cross
                               ? QStringLiteral("S")
                               : (enc ? QStringLiteral("S") : QStringLiteral("T"));
    const QString scores = shape(sh, {"B", QString::number(c.n_heads), len, kv_len});
    ArchBlock a = block(p + "." + name, Type::Attention, label,
                        c.kvHeads() == c.n_heads
                            ? QObject::tr("%1 heads · scores %2").arg(c.n_heads).arg(scores)
                            : QObject::tr("%1 Q heads, %2 K/V · scores %3")
                                  .arg(c.n_heads)
                                  .arg(c.kvHeads())
                                  .arg(scores),
                        attentionTip(kind) + projectionsTip(c, kind, sh, len, kv_len));
    a.kind = kind;
    const QString norm_id = p + ".norm_" + name;
    if (name == QLatin1String("ffn")) {
      const QString act = activationText(c.activation);
      const QString gated = c.activation == Activation::Silu   ? QStringLiteral("SwiGLU")
                            : c.activation == Activation::Relu ? QStringLiteral("ReGLU")
                                                               : QStringLiteral("GeGLU");
      a = c.gated_ffn
              ? block(p + ".ffn", Type::FeedForward, QObject::tr("Feed forward (%1)").arg(gated),
                      QStringLiteral("%1 → 2 × %2 → %1").arg(c.d_model).arg(c.d_ff),
                      QObject::tr("A gated network at every position on its own: two Linear "
                                  "d_model → d_ff = %1, one through %2 (the gate), multiplied "
                                  "element by element with the other, then Linear back to "
                                  "d_model — click to see its activations.")
                          .arg(c.d_ff)
                          .arg(act))
              : block(p + ".ffn", Type::FeedForward, QObject::tr("Feed forward"),
                      QStringLiteral("%1 → %2 → %1 (%3)").arg(c.d_model).arg(c.d_ff).arg(act),
                      QObject::tr("The same two-layer network at every position on its own: "
                                  "Linear d_model → d_ff = %1, %2, Linear back to d_model — "
                                  "click to see its activations.")
                          .arg(c.d_ff)
                          .arg(act));
    }
    a = sublayerBlock(a, layer, s);
    int enter;
    if (pre) {
      enter = col.add(sublayerBlock(block(norm_id, Type::Norm, normName(c), {},
                                          QObject::tr("Pre-norm: before the sublayer, %1; the "
                                                      "residual path bypasses it.")
                                              .arg(normWhat(c))),
                                    layer, ns),
                      stream, extra);
      col.add(a, stream);
      const int add = col.add(block(p + ".add_" + name, Type::Add, QObject::tr("Add"), {},
                                    QObject::tr("The residual connection: adds the sublayer's "
                                                "output to its input.")),
                              stream);
      col.L->blocks[size_t(add)].layer = layer;
      col.residual(enter, add);
    } else {
      enter = col.add(a, stream, extra);
      const int add = col.add(
          sublayerBlock(block(norm_id, Type::AddNorm, QObject::tr("Add & Norm"), {},
                              QObject::tr("Adds the sublayer's input back (the residual "
                                          "connection), then normalises each position's vector "
                                          "to mean 0 and variance 1 and scales and shifts it.")),
                        layer, ns),
          stream);
      col.residual(enter, add);
    }
    extra = 0;
  };
  if (enc) {
    sub(AttentionKind::EncoderSelf, QStringLiteral("self"), Sublayer::SelfAttention,
        Sublayer::NormSelf, attentionLabel(c, {}));
  } else {
    sub(AttentionKind::DecoderSelf, QStringLiteral("self"), Sublayer::SelfAttention,
        Sublayer::NormSelf, attentionLabel(c, QObject::tr("Masked")));
    if (c.hasCross())
      sub(AttentionKind::Cross, QStringLiteral("cross"), Sublayer::CrossAttention,
          Sublayer::NormCross, attentionLabel(c, {}) + QObject::tr(" (cross)"));
  }
  sub(AttentionKind::EncoderSelf, QStringLiteral("ffn"), Sublayer::FeedForward,
      Sublayer::NormFeedForward, QString());
  const double frame_top = col.top - kFramePad / 2;
  frame->side = col.side;
  frame->rect = QRectF(col.x - 34, frame_top, kColumnWidth + 68, frame_bottom - frame_top);
  col.top -= kFramePad;  // the next block keeps clear of the frame
}

}  // namespace

const ArchBlock* ArchLayout::find(const QString& id) const {
  for (const auto& b : blocks)
    if (b.id == id) return &b;
  return nullptr;
}

ArchLayout layoutArchitecture(const ModelConfig& c, const ArchShapes& sh, int enc_layer,
                              int dec_layer) {
  ArchLayout L;
  const QString d = QString::number(c.d_model);
  const int V = int(c.outputVocab().size());
  Column enc{&L, Side::Source, kSideMargin};
  Column dec{&L, Side::Target, c.hasEncoder() ? kSideMargin + kColumnWidth + kMiddle : kSideMargin};
  auto final_norm = [&](Column& col, const QString& p, const QString& len, Sublayer s) {
    if (!c.final_norm) return;
    ArchBlock b = block(p + ".final_norm", Type::Norm, QObject::tr("%1 (final)").arg(normName(c)),
                        {}, QObject::tr("Over the whole stack's output: %1.").arg(normWhat(c)));
    col.add(sublayerBlock(b, -1, s), shape(sh, {"B", len, d}));
  };
  auto head = [&](Column& col, const QString& len, const QString& from) {
    col.add(block("head.linear", Type::Linear, QObject::tr("Linear (output projection)"),
                  QObject::tr("%1 → %2 tokens").arg(c.d_model).arg(V),
                  QObject::tr("Turns each position's vector into one score (logit) per token of "
                              "the vocabulary — click to see the logits.")),
            from);
    col.add(block("head.softmax", Type::Softmax, QObject::tr("Softmax"), {},
                  QObject::tr("Turns each position's logits into probabilities that sum to 1; "
                              "decoding picks the next token from them.")),
            shape(sh, {"B", len, QString::number(V)}));
    col.add(block("head.output", Type::Output, QObject::tr("Output probabilities"),
                  c.hasDecoder() ? QObject::tr("the next token, at every position")
                                 : QObject::tr("the token at every position (masked LM)"),
                  {}),
            shape(sh, {"B", len, QString::number(V)}));
  };

  // A stack: its embeddings, one layer drawn with "N×", its final norm.
  auto stack = [&](Column& col, const QString& p, const QString& len, int layer, int layers) {
    addEmbedding(col, c, sh, p, len);
    ArchFrame f;
    f.layer = std::clamp(layer, 0, std::max(0, layers - 1));
    f.layers = layers;
    addLayer(col, c, sh, p, len, f.layer, &f);
    L.frames.push_back(f);
    final_norm(col, p, len, Sublayer::FinalNorm);
  };
  if (c.hasEncoder())
    stack(enc, QStringLiteral("enc"), QStringLiteral("S"), enc_layer, c.n_encoder_layers);
  if (c.hasDecoder()) {
    stack(dec, QStringLiteral("dec"), QStringLiteral("T"), dec_layer, c.n_decoder_layers);
    head(dec, QStringLiteral("T"), shape(sh, {"B", "T", d}));
  } else {
    // Encoder-only: its heads above the encoder (the class head beside a token head).
    const QString stream = shape(sh, {"B", "S", d});
    const int enc_top = enc.last;
    if (c.tokenHead() == TokenHead::BertMlm) {
      enc.add(block("head.mlm", Type::Linear, QObject::tr("MLM transform"),
                    QObject::tr("Linear, %1, layer norm").arg(activationText(c.activation)),
                    QObject::tr("BERT's masked-LM head: a Linear layer, the activation and a layer "
                                "norm before the projection onto the vocabulary.")),
              stream);
      head(enc, QStringLiteral("S"), stream);
    } else if (c.tokenHead() == TokenHead::Linear) {
      head(enc, QStringLiteral("S"), stream);
    }
    if (c.classHead() != ClassHead::None) {
      Column cls{&L, Side::Source, kSideMargin + kColumnWidth + kMiddle};
      cls.top = L.blocks[size_t(enc_top)].rect.top();
      const bool pooler = c.classHead() == ClassHead::Pooler;
      const int nc = std::max(c.n_classes, 1);
      cls.add(
          block("head.pool", Type::Pool,
                pooler ? QObject::tr("Pooler: position 0 → Linear → tanh")
                       : QObject::tr("Mean over all positions"),
                shape(sh, {"B", d}),
                pooler ? QObject::tr("Takes the first position's vector (the [CLS] token) "
                                     "through a Linear layer and tanh: one vector per sentence.")
                       : QObject::tr("Averages the encoder's output over the positions "
                                     "(padding included, as torch.mean does): one vector per "
                                     "sentence.")),
          {});
      // The stream from the encoder's output to the class head.
      const QRectF from = L.blocks[size_t(enc_top)].rect, to = L.blocks[size_t(cls.last)].rect;
      ArchArrow a;
      a.path << QPointF(from.right(), from.center().y()) << QPointF(to.left(), to.center().y());
      a.shape = stream;
      a.label_at = QPointF(from.right() + 8, from.center().y() - 10);
      L.arrows.push_back(a);
      cls.add(block("head.classifier", Type::Linear, QObject::tr("Classifier (Linear)"),
                    QObject::tr("%1 → %2 classes").arg(c.d_model).arg(nc),
                    QObject::tr("One score per class for the whole sentence.")),
              shape(sh, {"B", d}));
      cls.add(block("head.class_output", Type::Output, QObject::tr("Class probabilities"),
                    shape(sh, {"B", QString::number(nc)}), {}),
              shape(sh, {"B", QString::number(nc)}));
    }
  }

  // The encoder's output into every decoder layer's cross-attention.
  if (c.hasCross()) {
    const ArchBlock* cross = L.find(QStringLiteral("dec.cross"));
    const QRectF from = L.blocks[size_t(enc.last)].rect;
    const double y_up = from.top() - 22;
    const double xm = kSideMargin + kColumnWidth + kMiddle * 0.45;
    ArchArrow m;
    m.path << QPointF(enc.cx(), from.top()) << QPointF(enc.cx(), y_up) << QPointF(xm, y_up)
           << QPointF(xm, cross->rect.center().y())
           << QPointF(cross->rect.left(), cross->rect.center().y());
    m.shape = QObject::tr("memory %1 → K, V").arg(shape(sh, {"B", "S", d}));
    m.label_at = QPointF(enc.cx() + 7, y_up - 9);
    L.arrows.push_back(m);
  }

  // Shift so that the figure starts at (0, 0) with a margin; the chooser arrows of the frames.
  double min_y = 0, max_x = 0;
  for (const auto& b : L.blocks) {
    min_y = std::min(min_y, b.rect.top());
    max_x = std::max(max_x, b.rect.right());
  }
  for (const auto& f : L.frames) min_y = std::min(min_y, f.rect.top());
  const double dy = -min_y + 40;
  for (auto& b : L.blocks) b.rect.translate(0, dy);
  for (auto& a : L.arrows) {
    a.path.translate(0, dy);
    a.label_at += QPointF(0, dy);
  }
  for (auto& f : L.frames) {
    f.rect.translate(0, dy);
    const bool left = f.side == Side::Source || !c.hasEncoder();
    const double x = left ? f.rect.left() - 62 : f.rect.right() + 8;
    const double y = f.rect.center().y() + 14;
    f.previous = QRectF(x, y, 22, 20);
    f.next = QRectF(x + 32, y, 22, 20);
  }
  L.size = QSizeF(max_x + kSideMargin, 40 + dy);
  return L;
}

// ---- activations ------------------------------------------------------------------------------

BlockActivations blockActivations(const ArchBlock& blk, const Model& model, const Trace& t,
                                  const Trace& recorded, int b) {
  const ModelConfig& c = model.config();
  BlockActivations a;
  a.title = blk.label;
  const Side side = blk.side;
  const bool last_stack = (side == Side::Target) == c.hasDecoder();
  a.row_labels = sideTokens(t, side, b);
  if (blk.id.startsWith(QLatin1String("head.")))
    a.row_labels = sideTokens(t, c.hasDecoder() ? Side::Target : Side::Source, b);
  const int d = c.d_model;
  auto rowsOf = [&](const Tensor& x, std::vector<float>& out, int* cols) {
    if (x.empty() || b >= x.dim(0)) return;
    const int64_t n = x.dim(1), w = x.dim(2);
    out.assign(x.ptr() + b * n * w, x.ptr() + (b + 1) * n * w);
    a.rows = int(n);
    *cols = int(w);
  };
  if (blk.type == Type::Embedding || blk.type == Type::Positional ||
      blk.id.endsWith(QLatin1String(".embed_norm"))) {
    if (const SublayerActivation* s = recorded.activation(side, -1, Sublayer::Embedding)) {
      rowsOf(s->input, a.input, &a.in_cols);
      rowsOf(s->output, a.output, &a.out_cols);
    }
    a.in_name = c.embed_scale ? QObject::tr("token embeddings × √d_model")
                              : QObject::tr("token embeddings");
    a.out_name = c.positional == Positional::Rotary
                     ? QObject::tr(
                           "the first layer's input (rotary positions turn queries and "
                           "keys inside attention instead)")
                     : QObject::tr("+ positions%1: the first layer's input")
                           .arg(c.embed_norm ? QObject::tr(", normalised") : QString());
    a.note = QObject::tr(
        "As the model computed them: embedding rows of the ids, plus the "
        "positional encoding.");
    return a;
  }
  // The token logits of sentence b [positions, V]: the rows the trace kept, the others computed
  // again from its hidden states; of a long input's as many first positions as 16 MiB hold.
  auto logitsOf = [&](std::vector<float>& out, int* cols) {
    const TokenLogits& l = t.logits;
    if (l.empty() || b >= l.batch()) return;
    const int V = l.vocab();
    const int shown =
        int(std::min<int64_t>(l.positions(), std::max<int64_t>(1, (int64_t(16) << 20) / 4 / V)));
    out = std::move(logitsRows(model, t, b, 0, shown).data);
    a.rows = shown;
    *cols = V;
    if (shown < l.positions()) {
      a.row_labels = a.row_labels.mid(0, shown);
      a.note =
          QObject::tr("The first %1 of %2 positions: the logits of every position would take %3.")
              .arg(shown)
              .arg(l.positions())
              .arg(QString::fromStdString(formatBytes(uint64_t(l.positions()) * V * 4)));
    }
  };
  if (blk.id == QLatin1String("head.linear")) {
    rowsOf(t.hidden, a.input, &a.in_cols);
    logitsOf(a.output, &a.out_cols);
    a.input.resize(size_t(a.rows) * size_t(a.in_cols));
    a.in_name = QObject::tr("the last stack's output");
    a.out_name = QObject::tr("logits, one per vocabulary token");
    return a;
  }
  if (blk.id == QLatin1String("head.softmax")) {
    logitsOf(a.input, &a.in_cols);
    a.output = a.input;
    a.out_cols = a.in_cols;
    for (int i = 0; i < a.rows; ++i) {
      float* r = a.output.data() + size_t(i) * a.out_cols;
      const float mx = *std::max_element(r, r + a.out_cols);
      double sum = 0;
      for (int k = 0; k < a.out_cols; ++k) sum += std::exp(double(r[k]) - mx);
      for (int k = 0; k < a.out_cols; ++k) r[k] = float(std::exp(double(r[k]) - mx) / sum);
    }
    a.in_name = QObject::tr("logits");
    a.out_name = QObject::tr("probabilities (each row sums to 1)");
    return a;
  }
  if (blk.has_sublayer) {
    if (const SublayerActivation* s = recorded.activation(side, blk.layer, blk.sublayer)) {
      rowsOf(s->input, a.input, &a.in_cols);
      rowsOf(s->output, a.output, &a.out_cols);
      a.in_name = QObject::tr("input");
      a.out_name = QObject::tr("output");
      return a;
    }
  }
  // The stack's last block: its output is the trace's hidden states.
  const int layers = side == Side::Source ? c.n_encoder_layers : c.n_decoder_layers;
  const bool top =
      blk.id.endsWith(QLatin1String(".final_norm")) ||
      (!c.final_norm && blk.layer == layers - 1 &&
       (blk.id.endsWith(QLatin1String(".norm_ffn")) || blk.id.endsWith(QLatin1String(".add_ffn"))));
  if (last_stack && top) {
    rowsOf(t.hidden, a.output, &a.out_cols);
    a.in_cols = d;
    a.out_name = QObject::tr("the stack's output (the trace's hidden states)");
  }
  a.note =
      QObject::tr(
          "What goes into and out of this block is not in the trace (Trace::activations); %1")
          .arg(a.output.empty() ? QObject::tr("only its shapes are known.")
                                : QObject::tr("the output shown is the stack's final output."));
  return a;
}

// ---- the diagram widget -----------------------------------------------------------------------

ArchitectureDiagram::ArchitectureDiagram(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  setMinimumSize(320, 260);
}

void ArchitectureDiagram::setArchLayout(ArchLayout layout) {
  layout_ = std::move(layout);
  if (layout_.size.isEmpty())
    setMinimumSize(320, 260);
  else
    setMinimumSize((layout_.size * kMinScale).toSize());
  updateGeometry();
  update();
}

void ArchitectureDiagram::setSelected(const QString& id) {
  selected_ = id;
  update();
}

QSize ArchitectureDiagram::sizeHint() const {
  return layout_.size.isEmpty() ? QSize(640, 600) : layout_.size.toSize();
}

QTransform ArchitectureDiagram::transform() const {
  if (layout_.size.isEmpty()) return {};
  const double s =
      std::min({width() / layout_.size.width(), height() / layout_.size.height(), 1.35});
  const double dx = (width() - layout_.size.width() * s) / 2;
  QTransform t;
  t.translate(dx, 0);
  t.scale(s, s);
  return t;
}

QRectF ArchitectureDiagram::blockRect(const QString& id) const {
  const ArchBlock* b = layout_.find(id);
  return b ? transform().mapRect(b->rect) : QRectF();
}

QRectF ArchitectureDiagram::frameChooser(Side side, bool next) const {
  for (const auto& f : layout_.frames)
    if (f.side == side) return transform().mapRect(next ? f.next : f.previous);
  return {};
}

const ArchBlock* ArchitectureDiagram::blockAt(QPointF pos) const {
  const QPointF p = transform().inverted().map(pos);
  for (const auto& b : layout_.blocks)
    if (b.rect.contains(p)) return &b;
  return nullptr;
}

namespace {

void arrowHead(QPainter& p, QPointF from, QPointF to) {
  const QLineF line(from, to);
  if (line.length() < 1) return;
  const double a = std::atan2(-line.dy(), line.dx());
  const double s = 7;
  QPolygonF head;
  head << to << to - QPointF(std::cos(a - 0.45) * s, -std::sin(a - 0.45) * s)
       << to - QPointF(std::cos(a + 0.45) * s, -std::sin(a + 0.45) * s);
  p.setBrush(p.pen().color());
  p.drawPolygon(head);
  p.setBrush(Qt::NoBrush);
}

}  // namespace

ArchitectureDiagram::BlockTexts ArchitectureDiagram::blockTexts(const ArchBlock& b) const {
  const double tw = b.rect.width() - 12;
  // A text wider than its box is drawn a little smaller rather than cut ("+ Positional encoding
  // (learned table)" in a large font); only past a quarter smaller is it elided.
  auto fitted = [tw](QFont f, const QString& s) {
    const double w = QFontMetricsF(f).horizontalAdvance(s);
    if (w > tw) f.setPointSizeF(f.pointSizeF() * std::max(0.75, tw / w));
    return f;
  };
  QFont bold = font();
  bold.setBold(true);
  QFont small = font();
  small.setPointSizeF(font().pointSizeF() * 0.85);
  BlockTexts t;
  t.label_font = fitted(bold, b.label);
  t.label = QFontMetricsF(t.label_font).elidedText(b.label, Qt::ElideRight, tw);
  t.detail_font = fitted(small, b.detail);
  t.detail = QFontMetricsF(t.detail_font).elidedText(b.detail, Qt::ElideRight, tw);
  return t;
}

void ArchitectureDiagram::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Base));
  if (layout_.blocks.empty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter, tr("Open a model to see its architecture"));
    return;
  }
  p.setRenderHint(QPainter::Antialiasing);
  p.setTransform(transform());
  const QColor text(0x20, 0x20, 0x20);
  QFont base = font();
  QFont bold = base;
  bold.setBold(true);
  QFont small = base;
  small.setPointSizeF(base.pointSizeF() * 0.85);

  // Stack frames with "N×" and the layer chooser.
  for (const auto& f : layout_.frames) {
    p.setPen(QPen(QColor(0xb0, 0xb0, 0xb0), 1.2));
    p.setBrush(QColor(0xf4, 0xf4, 0xf6));
    p.drawRoundedRect(f.rect, 10, 10);
    p.setBrush(Qt::NoBrush);
    QFont big = bold;
    big.setPointSizeF(base.pointSizeF() * 1.5);
    p.setFont(big);
    p.setPen(text);
    const QRectF label(f.previous.left(), f.rect.center().y() - 30, 60, 34);
    p.drawText(label, Qt::AlignCenter, QStringLiteral("%1×").arg(f.layers));
    p.setFont(small);
    p.drawText(QRectF(f.previous.left() - 13, f.previous.bottom() + 2, 80, 18), Qt::AlignCenter,
               tr("layer %1 of %2").arg(f.layer + 1).arg(f.layers));
    for (int k = 0; k < 2; ++k) {
      const QRectF r = k == 0 ? f.previous : f.next;
      const bool enabled = k == 0 ? f.layer > 0 : f.layer + 1 < f.layers;
      p.setPen(QPen(enabled ? QColor(0x50, 0x50, 0x50) : QColor(0xc8, 0xc8, 0xc8), 1));
      p.drawRoundedRect(r, 3, 3);
      p.drawText(r, Qt::AlignCenter, k == 0 ? QStringLiteral("◀") : QStringLiteral("▶"));
    }
  }

  // Arrows, then their shapes.
  for (const auto& a : layout_.arrows) {
    p.setPen(QPen(a.residual ? QColor(0x90, 0x90, 0x90) : QColor(0x40, 0x40, 0x40),
                  a.residual ? 1.3 : 1.6));
    p.drawPolyline(a.path);
    if (a.path.size() >= 2) arrowHead(p, a.path[a.path.size() - 2], a.path.back());
  }
  p.setFont(small);
  for (const auto& a : layout_.arrows) {
    if (a.shape.isEmpty()) continue;
    const QFontMetricsF fm(small);
    const QRectF r(a.label_at.x(), a.label_at.y() - fm.height() / 2,
                   fm.horizontalAdvance(a.shape) + 6, fm.height());
    p.fillRect(r.adjusted(-2, 0, 0, 0), QColor(255, 255, 255, 220));
    p.setPen(QColor(0x1a, 0x5f, 0xb4));
    p.drawText(r, Qt::AlignLeft | Qt::AlignVCenter, a.shape);
  }

  // Blocks.
  for (const auto& b : layout_.blocks) {
    const bool hot = b.id == hover_, sel = b.id == selected_;
    p.setPen(QPen(sel ? QColor(0xff, 0x6f, 0x00)
                      : (hot ? QColor(0x20, 0x20, 0x20) : QColor(0x70, 0x70, 0x70)),
                  sel ? 3 : (hot ? 2 : 1)));
    p.setBrush(fillOf(b.type));
    p.drawRoundedRect(b.rect, 7, 7);
    p.setBrush(Qt::NoBrush);
    p.setPen(text);
    const BlockTexts t = blockTexts(b);
    p.setFont(t.label_font);
    if (b.detail.isEmpty()) {
      p.drawText(b.rect.adjusted(6, 0, -6, 0), Qt::AlignCenter, t.label);
    } else {
      p.drawText(b.rect.adjusted(6, 2, -6, -b.rect.height() / 2),
                 Qt::AlignHCenter | Qt::AlignBottom, t.label);
      p.setFont(t.detail_font);
      p.setPen(QColor(0x40, 0x40, 0x40));
      p.drawText(b.rect.adjusted(6, b.rect.height() / 2, -6, -2), Qt::AlignHCenter | Qt::AlignTop,
                 t.detail);
    }
  }
}

void ArchitectureDiagram::mouseMoveEvent(QMouseEvent* event) {
  const ArchBlock* b = blockAt(event->position());
  const QString id = b ? b->id : QString();
  if (id != hover_) {
    hover_ = id;
    setCursor(b && b->type != Type::Output && b->type != Type::Tokens ? Qt::PointingHandCursor
                                                                      : Qt::ArrowCursor);
    update();
  }
}

void ArchitectureDiagram::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  const QPointF p = transform().inverted().map(event->position());
  for (const auto& f : layout_.frames) {
    if (f.previous.contains(p) && f.layer > 0) {
      emit layerChosen(f.side, f.layer - 1);
      return;
    }
    if (f.next.contains(p) && f.layer + 1 < f.layers) {
      emit layerChosen(f.side, f.layer + 1);
      return;
    }
  }
  if (const ArchBlock* b = blockAt(event->position())) emit blockClicked(b->id);
}

bool ArchitectureDiagram::event(QEvent* event) {
  if (event->type() == QEvent::ToolTip) {
    auto* he = static_cast<QHelpEvent*>(event);
    const ArchBlock* b = blockAt(he->pos());
    if (b && !b->tooltip.isEmpty())
      QToolTip::showText(
          he->globalPos(),
          QStringLiteral("<b>%1</b><br>%2")
              .arg(b->label.toHtmlEscaped(),
                   b->tooltip.toHtmlEscaped().replace(QLatin1Char('\n'), QStringLiteral("<br>"))),
          this);
    else
      QToolTip::hideText();
    return true;
  }
  return QWidget::event(event);
}

// ---- the view ---------------------------------------------------------------------------------

ArchitectureView::ArchitectureView(AppState* state, QWidget* parent)
    : View(state, tr("What am I looking at?"), parent) {
  // A recording that failed or was cancelled may be asked for again.
  connect(state->engine(), &Engine::jobFinished, this, [this](bool ok) {
    if (!ok) recording_ = false;
  });
  splitter_ = new QSplitter(Qt::Vertical, this);
  scroll_ = new QScrollArea(splitter_);
  scroll_->setWidgetResizable(true);
  scroll_->setFrameShape(QFrame::NoFrame);
  diagram_ = new ArchitectureDiagram(scroll_);
  scroll_->setWidget(diagram_);
  panel_ = new QWidget(splitter_);
  auto* pl = new QVBoxLayout(panel_);
  pl->setContentsMargins(0, 4, 0, 0);
  details_ = new QLabel(panel_);
  details_->setWordWrap(true);
  details_->setTextFormat(Qt::RichText);
  pl->addWidget(details_);
  auto* maps = new QHBoxLayout;
  in_map_ = new HeatmapWidget(panel_);
  out_map_ = new HeatmapWidget(panel_);
  for (auto* m : {in_map_, out_map_}) {
    m->setColormap(Colormap::rdbu());
    m->setMinimumHeight(150);
    maps->addWidget(m, 1);
  }
  pl->addLayout(maps, 1);
  splitter_->addWidget(scroll_);
  splitter_->addWidget(panel_);
  splitter_->setStretchFactor(0, 3);
  splitter_->setStretchFactor(1, 2);
  panel_->hide();
  layout_->addWidget(splitter_, 1);
  connect(diagram_, &ArchitectureDiagram::blockClicked, this, &ArchitectureView::activateBlock);
  connect(diagram_, &ArchitectureDiagram::layerChosen, this, [this](Side side, int layer) {
    (side == Side::Source ? enc_layer_ : dec_layer_) = layer;
    refreshNow();
  });
}

QWidget* ArchitectureView::exportWidget() {
  return splitter_;
}

void ArchitectureView::activateBlock(const QString& id) {
  const ArchBlock* b = diagram_->archLayout().find(id);
  if (!b) return;
  if (b->type == Type::Attention) {
    AttentionSelection s = state_->selection();
    s.kind = b->kind;
    s.layer = b->layer;
    state_->setSelection(s);
    emit openView(QStringLiteral("attention"));
    return;
  }
  if (b->type == Type::Tokens || b->type == Type::Output) return;
  showActivations(id);
}

void ArchitectureView::showActivations(const QString& id) {
  shown_ = id;
  diagram_->setSelected(id);
  const ArchBlock* b = diagram_->archLayout().find(id);
  auto snap = state_->snapshot();
  const Model* model = state_->model();
  panel_->show();
  if (!b || !model || !snap || !snap->trace) {
    details_->setText(tr("Press Run to see the numbers that flow through this block."));
    in_map_->setData({});
    out_map_->setData({});
    return;
  }
  const Trace& t = *snap->trace;
  // The clicked block stays in sight once the panel has taken its room.
  QTimer::singleShot(0, this, [this, id] {
    const QRectF r = diagram_->blockRect(id);
    if (!r.isEmpty())
      scroll_->ensureVisible(int(r.center().x()), int(r.center().y()), int(r.width() / 2) + 20,
                             int(r.height()) + 40);
  });
  // A sublayer's numbers come from the same pass run again with them recorded (once per
  // snapshot, off the GUI thread); until it is done the panel says so.
  const bool embeddings = b->type == Type::Embedding || b->type == Type::Positional ||
                          b->id.endsWith(QLatin1String(".embed_norm"));
  if ((b->has_sublayer || embeddings) && t.activations.empty() && recorded_for_ != snap->id) {
    if (!recording_) {
      recording_ = true;
      const uint64_t id_for = snap->id;
      auto trace = snap->trace;
      const MaskOptions masks = snap->masks;
      const bool started = state_->engine()->runTask(
          tr("Recording the activations"),
          [this, trace, masks, id_for](const Model& m,
                                       const std::atomic<bool>& cancel) -> std::function<void()> {
            Inputs in;
            in.src = trace->src_ids;
            in.segments = trace->segment_ids;
            in.tgt = trace->tgt_ids;
            ForwardOptions o;
            o.masks = masks;
            o.record = false;  // the attention is in the snapshot already
            o.keep_activations = true;
            o.cancel = &cancel;
            auto recorded = std::make_shared<const Trace>(m.forward(in, o));
            return [this, recorded, id_for] {
              recording_ = false;
              recorded_ = recorded;
              recorded_for_ = id_for;
              if (!shown_.isEmpty()) showActivations(shown_);
            };
          });
      if (!started) recording_ = false;
    }
    details_->setText(tr("<b>%1</b><br><i>Recording what goes into and out of every sublayer "
                         "for this input…</i>")
                          .arg(b->label.toHtmlEscaped()));
    in_map_->setData({});
    out_map_->setData({});
    return;
  }
  const Trace& recorded =
      t.activations.empty() && recorded_ && recorded_for_ == snap->id ? *recorded_ : t;
  const int sb = std::clamp(state_->selection().batch, 0, std::max(0, t.batch - 1));
  const BlockActivations a = blockActivations(*b, *model, t, recorded, sb);
  auto show = [&](HeatmapWidget* w, const std::vector<float>& v, int cols, const QString& name) {
    if (v.empty() || a.rows == 0) {
      HeatmapData none;
      none.title = tr("%1: not recorded").arg(name.isEmpty() ? tr("input") : name);
      w->setData(none);
      return;
    }
    HeatmapData d =
        signedHeatmap(v, a.rows, cols,
                      QStringLiteral("%1 %2").arg(name, shapeString({a.rows, cols})), tr("value"));
    d.row_labels = a.row_labels.mid(0, a.rows);
    d.row_title = tr("positions");
    d.col_title = tr("dimensions");
    d.row_noun = tr("position");
    d.col_noun = tr("dimension");
    d.show_values = false;
    d.square_cells = false;
    w->setData(std::move(d));
  };
  show(in_map_, a.input, a.in_cols, a.in_name);
  show(out_map_, a.output, a.out_cols, a.out_name);
  QStringList lines;
  lines << QStringLiteral("<b>%1</b>").arg(a.title.toHtmlEscaped());
  if (!a.input.empty())
    lines << tr("Input: %1").arg(summaryText(summarize(a.input.data(), a.rows, a.in_cols)));
  if (!a.output.empty())
    lines << tr("Output: %1").arg(summaryText(summarize(a.output.data(), a.rows, a.out_cols)));
  if (!a.note.isEmpty()) lines << QStringLiteral("<i>%1</i>").arg(a.note.toHtmlEscaped());
  details_->setText(lines.join(QStringLiteral("<br>")));
}

void ArchitectureView::refresh() {
  const Model* model = state_->model();
  auto snap = state_->snapshot();
  if (!model) {
    diagram_->setArchLayout({});
    explanation_->setHtml(tr("The model's architecture appears here once a model is open."));
    return;
  }
  const ModelConfig& c = model->config();
  // Follow the selection when it moves: its kind's stack shows its layer.
  const AttentionSelection& s = state_->selection();
  if (!(s == followed_)) {
    followed_ = s;
    (s.kind == AttentionKind::EncoderSelf ? enc_layer_ : dec_layer_) = s.layer;
  }
  ArchShapes sh;
  if (snap && snap->trace) {
    const Trace& t = *snap->trace;
    sh.B = t.batch;
    sh.S = t.src_len;
    sh.T = t.tgt_len;
    const int b = std::clamp(s.batch, 0, std::max(0, t.batch - 1));
    sh.src_words = sideTokens(t, Side::Source, b).join(' ');
    sh.tgt_words = sideTokens(t, Side::Target, b).join(' ');
  }
  diagram_->setArchLayout(layoutArchitecture(c, sh, enc_layer_, dec_layer_));
  diagram_->setSelected(shown_);
  if (!shown_.isEmpty() && diagram_->archLayout().find(shown_))
    showActivations(shown_);
  else
    panel_->hide();
  const QString arch = QString::fromLatin1(architectureName(c.architecture()));
  explanation_->setHtml(
      tr("<p style='margin:0'><b>%1</b> — the %3 class of %2, %4. Read it from the bottom up, as "
         "in the "
         "paper “Attention Is All You Need”: token ids become vectors of d_model = %5 numbers, "
         "%10, then every layer refines each position's vector with "
         "%6 of d_k = %7) and a feed-forward network (d_ff = %8), "
         "each wrapped in a residual connection and %11 (%9).</p>"
         "<p style='margin:4px 0 0 0'>Blue labels are the tensors on each arrow, with this run's "
         "numbers (B sentences, S source and T target positions). Hover a block for what it "
         "does; click an attention block to open it, any other block to see its input and "
         "output as position × dimension heatmaps. ◀ ▶ choose the layer a stack shows.</p>")
          .arg(QString::fromStdString(c.name.empty() ? c.model : c.name).toHtmlEscaped())
          .arg(QString::fromStdString(familyTitle(c.family))
                   .section(QStringLiteral(" ("), 0, 0)
                   .toHtmlEscaped())
          .arg(QString::fromStdString(c.model))
          .arg(arch)
          .arg(c.d_model)
          .arg(c.kvHeads() == c.n_heads ? tr("multi-head attention (%1 heads").arg(c.n_heads)
                                        : tr("%1 (%2 query heads sharing %3 key/value heads")
                                              .arg(attentionLabel(c, {}).toLower())
                                              .arg(c.n_heads)
                                              .arg(c.kvHeads()))
          .arg(c.d_k)
          .arg(c.d_ff)
          .arg(c.norm == NormPlacement::Pre ? tr("pre-norm: the norm comes before each sublayer")
                                            : tr("post-norm: add, then norm, after each sublayer"))
          .arg(c.positional == Positional::Rotary
                   ? tr("positions are not added but turn each head's queries and keys inside "
                        "attention (rotary)")
                   : tr("positions are added"))
          .arg(c.norm_kind == NormKind::RmsNorm ? tr("an RMSNorm") : tr("a layer norm")));
}

}  // namespace attnviz::gui
