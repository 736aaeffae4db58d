<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>QObject</name>
    <message>
        <source>Could not write %1</source>
        <translation>无法写入 %1</translation>
    </message>
    <message>
        <source>Exported by attnviz</source>
        <translation>由 attnviz 导出</translation>
    </message>
    <message>
        <source>queries ↓ · input tokens</source>
        <translation>查询 ↓ · 输入词元</translation>
    </message>
    <message>
        <source>queries ↓ · target tokens (decoder input)</source>
        <translation>查询 ↓ · 目标词元（解码器输入）</translation>
    </message>
    <message>
        <source>keys → · input tokens</source>
        <translation>键 → · 输入词元</translation>
    </message>
    <message>
        <source>keys → · target tokens</source>
        <translation>键 → · 目标词元</translation>
    </message>
    <message>
        <source>keys → · source tokens (encoder output)</source>
        <translation>键 → · 源词元（编码器输出）</translation>
    </message>
    <message>
        <source>Encoder self-attention</source>
        <translation>编码器自注意力</translation>
    </message>
    <message>
        <source>Decoder masked self-attention</source>
        <translation>解码器掩码自注意力</translation>
    </message>
    <message>
        <source>Cross-attention (encoder–decoder)</source>
        <translation>交叉注意力（编码器–解码器）</translation>
    </message>
    <message>
        <source>encoder</source>
        <translation>编码器</translation>
    </message>
    <message>
        <source>decoder</source>
        <translation>解码器</translation>
    </message>
    <message>
        <source>mean of heads</source>
        <translation>各头平均</translation>
    </message>
    <message>
        <source>head %1</source>
        <translation>头 %1</translation>
    </message>
    <message>
        <source>%1 · %2 layer %3 · %4</source>
        <translation>%1 · %2 第 %3 层 · %4</translation>
    </message>
    <message>
        <source>query head %1 reads the one key/value head — all %2 query heads share it</source>
        <translation>查询头 %1 读取唯一的键/值头 — 全部 %2 个查询头共享它</translation>
    </message>
    <message>
        <source>query head %1 reads key/value head %2 of %3 — %4 query heads share it</source>
        <translation>查询头 %1 读取键/值头 %2（共 %3 个）— %4 个查询头共享它</translation>
    </message>
    <message>
        <source>reads K/V head %1 of %2</source>
        <translation>读取 K/V 头 %1（共 %2 个）</translation>
    </message>
    <message>
        <source>(mean of %1 heads)</source>
        <translation>（%1 个头的平均）</translation>
    </message>
    <message>
        <source>probability</source>
        <translation>概率</translation>
    </message>
    <message>
        <source>score</source>
        <translation>分数</translation>
    </message>
    <message>
        <source>masked score</source>
        <translation>掩码后的分数</translation>
    </message>
    <message>
        <source>mask</source>
        <translation>掩码</translation>
    </message>
    <message>
        <source>look-ahead</source>
        <translation>前瞻</translation>
    </message>
    <message>
        <source>source padding</source>
        <translation>源填充</translation>
    </message>
    <message>
        <source>padding</source>
        <translation>填充</translation>
    </message>
    <message>
        <source>target padding</source>
        <translation>目标填充</translation>
    </message>
    <message>
        <source>The input cannot be used</source>
        <translation>无法使用此输入</translation>
    </message>
    <message>
        <source>Cancelled</source>
        <translation>已取消</translation>
    </message>
    <message>
        <source>Compute backend error</source>
        <translation>计算后端错误</translation>
    </message>
    <message>
        <source>Out of GPU memory</source>
        <translation>GPU 内存不足</translation>
    </message>
    <message>
        <source>Too large</source>
        <translation>太大</translation>
    </message>
    <message>
        <source>File error</source>
        <translation>文件错误</translation>
    </message>
    <message>
        <source>The model cannot be loaded</source>
        <translation>无法加载模型</translation>
    </message>
    <message>
        <source>Forward pass (layers)</source>
        <translation>前向传播（各层）</translation>
    </message>
    <message>
        <source>Out of memory</source>
        <translation>内存不足</translation>
    </message>
    <message>
        <source>%1 needed more memory than is available.</source>
        <translation>%1 需要的内存超过了可用内存。</translation>
    </message>
    <message>
        <source>Unexpected error</source>
        <translation>意外错误</translation>
    </message>
    <message>
        <source>Decoding</source>
        <translation>解码中</translation>
    </message>
    <message>
        <source>Decoding the batch</source>
        <translation>正在解码这一批</translation>
    </message>
    <message>
        <source>mean %1, std %2, min %3, max %4, mean length of a position&apos;s vector %5</source>
        <translation>均值 %1，标准差 %2，最小 %3，最大 %4，位置向量的平均长度 %5</translation>
    </message>
    <message>
        <source>Attention heads</source>
        <translation>注意力头</translation>
    </message>
    <message>
        <source>Start token&apos;s id</source>
        <translation>起始词元的 id</translation>
    </message>
    <message>
        <source>End token&apos;s id</source>
        <translation>结束词元的 id</translation>
    </message>
    <message>
        <source>Padding token&apos;s id</source>
        <translation>填充词元的 id</translation>
    </message>
    <message>
        <source>Norm placement</source>
        <translation>归一化位置</translation>
    </message>
    <message>
        <source>Activation</source>
        <translation>激活函数</translation>
    </message>
    <message>
        <source>%1 for %2</source>
        <translation>%1（%2）</translation>
    </message>
    <message>
        <source> px</source>
        <translation> 像素</translation>
    </message>
    <message>
        <source>At most:</source>
        <translation>最多：</translation>
    </message>
    <message>
        <source>Pixels per point of the PNG: 2× or 3× stays sharp on slides</source>
        <translation>PNG 每点的像素数：2× 或 3× 在幻灯片上保持清晰</translation>
    </message>
    <message>
        <source>Scale:</source>
        <translation>刻度：</translation>
    </message>
    <message>
        <source>Title (what is shown, on which sentence)</source>
        <translation>标题（显示的内容，在哪个句子上）</translation>
    </message>
    <message>
        <source>Colour legend</source>
        <translation>颜色图例</translation>
    </message>
    <message>
        <source>The figure shrinks to what it draws: no empty margins.</source>
        <translation>图缩小到所画的内容：没有空白边距。</translation>
    </message>
    <message>
        <source>A row and a column</source>
        <translation>一行和一列</translation>
    </message>
    <message>
        <source>Each &lt;b&gt;row&lt;/b&gt; is one position of the decoder — the target word it has just read, &lt;code&gt;&amp;lt;bos&amp;gt;&lt;/code&gt; first — and each &lt;b&gt;column&lt;/b&gt; a source word: a cell&apos;s colour is how much that row takes from that word, and every row adds up to 1. A row is choosing the &lt;i&gt;next&lt;/i&gt; word, so the row of &lt;i&gt;nara&lt;/i&gt; (the word for dog) already looks at &lt;i&gt;big&lt;/i&gt;, the word it is about to translate; hover a cell for its numbers.</source>
        <translation>每一&lt;b&gt;行&lt;/b&gt;是解码器的一个位置 — 它刚读到的目标词，&lt;code&gt;&amp;lt;bos&amp;gt;&lt;/code&gt; 在最前 — 每一&lt;b&gt;列&lt;/b&gt;是一个源词：格子的颜色表示这一行从那个词取了多少，每一行加起来等于 1。一行是在选择&lt;i&gt;下一个&lt;/i&gt;词，所以 &lt;i&gt;nara&lt;/i&gt;（“狗”）那一行已经在关注 &lt;i&gt;big&lt;/i&gt;，也就是它即将翻译的词；把鼠标悬停在格子上查看数值。</translation>
    </message>
    <message>
        <source>Finding the alignment</source>
        <translation>正在寻找对齐</translation>
    </message>
    <message>
        <source>One head alone — the sharpest of the last layer — puts most of each row on one source word, the word being translated next. Follow the bright cells down: &lt;i&gt;dog, big, the&lt;/i&gt;, then &lt;i&gt;cat, small, a&lt;/i&gt;, and &lt;i&gt;sees&lt;/i&gt; last; they cross instead of running down the diagonal, because this made-up language mirrors every noun phrase and puts the verb at the end.</source>
        <translation>单独一个头 — 最后一层中最集中的那个 — 把每一行的大部分权重放在一个源词上，即接下来要翻译的词。沿着亮格往下看：&lt;i&gt;dog, big, the&lt;/i&gt;，然后 &lt;i&gt;cat, small, a&lt;/i&gt;，最后是 &lt;i&gt;sees&lt;/i&gt;；它们交叉而不是沿对角线下行，因为这种人造语言把每个名词短语镜像反转，并把动词放在末尾。</translation>
    </message>
    <message>
        <source>The anti-diagonal of reversal</source>
        <translation>反转形成的反对角线</translation>
    </message>
    <message>
        <source>This model reverses its input, so its first output copies the last input and the bright cells run from the top right to the bottom left: an anti-diagonal. Each row again looks at the word it is about to write: the row of &lt;i&gt;9&lt;/i&gt; (just written) looks at &lt;i&gt;8&lt;/i&gt;.</source>
        <translation>这个模型把输入反转，所以它的第一个输出复制最后一个输入，亮格从右上角延伸到左下角：一条反对角线。每一行同样关注它即将写出的词：&lt;i&gt;9&lt;/i&gt;（刚写出）那一行关注 &lt;i&gt;8&lt;/i&gt;。</translation>
    </message>
    <message>
        <source>One head, or the mean of the heads</source>
        <translation>一个头，或各头的平均</translation>
    </message>
    <message>
        <source>Each thumbnail is one head of one decoder layer: in the first layer the heads differ and spread their weight, in the last they are sharp and agree. The mean of the heads (key &lt;b&gt;M&lt;/b&gt;) sums up heads that agree, but where they disagree, as in the first layer, it draws a blur no head computes — click a thumbnail to see one head alone.</source>
        <translation>每个缩略图是一个解码器层的一个头：在第一层，各头各不相同，权重分散；在最后一层，它们集中且一致。各头平均（按键 &lt;b&gt;M&lt;/b&gt;）能概括一致的头，但在它们不一致的地方（如第一层），它画出的是任何头都没有计算过的一片模糊 — 点击一个缩略图单独查看一个头。</translation>
    </message>
    <message>
        <source>Switching the look-ahead mask off</source>
        <translation>关闭前瞻掩码</translation>
    </message>
    <message>
        <source>The look-ahead mask is now off (its switch is in the Masks view): every target position also sees the words after it, and the upper triangle of the decoder&apos;s self-attention, hatched before, takes about half of each row. The model never learned to use the future, so for the same words its predictions fall apart — in the Decoding view most top choices are now &lt;code&gt;&amp;lt;eos&amp;gt;&lt;/code&gt;.</source>
        <translation>前瞻掩码现在关闭了（它的开关在“掩码”视图中）：每个目标位置也能看到它后面的词，解码器自注意力的上三角（之前画了斜线）占了每行大约一半。模型从未学过利用未来，所以对同样的词，它的预测崩溃了 — 在“解码”视图中，大多数首选现在都是 &lt;code&gt;&amp;lt;eos&amp;gt;&lt;/code&gt;。</translation>
    </message>
    <message>
        <source>Stepping the decoder</source>
        <translation>正在单步运行解码器</translation>
    </message>
    <message>
        <source>The decoder writes one word per step: after &lt;i&gt;nara lugol na ka&lt;/i&gt; (dog, big, the, then the subject marker) its newest row of cross-attention has moved to &lt;i&gt;cat&lt;/i&gt;, and the chart shows how sure it is that &lt;i&gt;bizu&lt;/i&gt; comes next. Press &lt;b&gt;→&lt;/b&gt; to let it write a word, &lt;b&gt;←&lt;/b&gt; to take one back.</source>
        <translation>解码器每步写出一个词：在 &lt;i&gt;nara lugol na ka&lt;/i&gt;（狗、大、那只，然后是主语标记）之后，它最新的一行交叉注意力已经移到 &lt;i&gt;cat&lt;/i&gt;，图表显示它有多确定接下来是 &lt;i&gt;bizu&lt;/i&gt;。按 &lt;b&gt;→&lt;/b&gt; 让它写一个词，按 &lt;b&gt;←&lt;/b&gt; 收回一个。</translation>
    </message>
    <message>
        <source>Branching</source>
        <translation>分支</translation>
    </message>
    <message>
        <source>Choose a word other than the model&apos;s (select it in the top-k list, then &lt;i&gt;Use this token&lt;/i&gt;) and the decoder goes on from yours: here &lt;i&gt;3&lt;/i&gt; was picked instead of &lt;i&gt;8&lt;/i&gt;. After it the row looks at &lt;i&gt;7&lt;/i&gt; and writes &lt;i&gt;7&lt;/i&gt;, not &lt;i&gt;2&lt;/i&gt; — this model reverses by position, reading one source slot after the other, whatever it wrote before.</source>
        <translation>选一个不同于模型的词（在 top-k 列表中选中它，然后按&lt;i&gt;使用这个词元&lt;/i&gt;），解码器就从你的词继续：这里选了 &lt;i&gt;3&lt;/i&gt; 而不是 &lt;i&gt;8&lt;/i&gt;。之后这一行关注 &lt;i&gt;7&lt;/i&gt; 并写出 &lt;i&gt;7&lt;/i&gt;，而不是 &lt;i&gt;2&lt;/i&gt; — 这个模型按位置反转，一个接一个地读源句的位置，不管它之前写了什么。</translation>
    </message>
    <message>
        <source>&amp;Tour: what to look for…</source>
        <translation>导览：该看什么(&amp;T)…</translation>
    </message>
    <message>
        <source>A guided first look at attention, in %1 steps</source>
        <translation>带你初识注意力的导览，共 %1 步</translation>
    </message>
    <message>
        <source>&amp;Help</source>
        <translation>帮助(&amp;H)</translation>
    </message>
    <message>
        <source>RMSNorm</source>
        <translation>RMSNorm</translation>
    </message>
    <message>
        <source>Layer norm</source>
        <translation>层归一化</translation>
    </message>
    <message>
        <source>divides each position&apos;s vector by its root mean square, then scales it (no centring, no shift)</source>
        <translation>把每个位置的向量除以它的均方根，然后缩放（不减均值，不平移）</translation>
    </message>
    <message>
        <source>subtracts each position&apos;s mean and divides by its standard deviation (unbiased, with ε added to it: the Annotated Transformer&apos;s LayerNorm), then scales and shifts it</source>
        <translation>减去每个位置的均值，再除以它的标准差（无偏估计，并加上 ε：即 Annotated Transformer 的 LayerNorm），然后缩放和平移</translation>
    </message>
    <message>
        <source>normalises each position&apos;s vector to mean 0 and variance 1, then scales and shifts it</source>
        <translation>把每个位置的向量归一化为均值 0、方差 1，然后缩放和平移</translation>
    </message>
    <message>
        <source>Inputs</source>
        <translation>输入</translation>
    </message>
    <message>
        <source>Inputs (the prompt)</source>
        <translation>输入（提示）</translation>
    </message>
    <message>
        <source>Outputs (shifted right)</source>
        <translation>输出（右移一位）</translation>
    </message>
    <message>
        <source>token ids %1</source>
        <translation>词元 id %1</translation>
    </message>
    <message>
        <source>The source sentence as token ids, one per position.</source>
        <translation>源句子的词元 id，每个位置一个。</translation>
    </message>
    <message>
        <source>The target so far, starting with the start token: position t predicts the token at t + 1.</source>
        <translation>目前的目标，以起始词元开头：位置 t 预测 t + 1 处的词元。</translation>
    </message>
    <message>
        <source>Input embedding</source>
        <translation>输入嵌入</translation>
    </message>
    <message>
        <source>Output embedding</source>
        <translation>输出嵌入</translation>
    </message>
    <message>
        <source> + segment</source>
        <translation> + 片段</translation>
    </message>
    <message>
        <source>a learned row of %1 numbers per id</source>
        <translation>每个 id 一行可学习的 %1 个数</translation>
    </message>
    <message>
        <source>Looks up a learned vector of d_model = %1 numbers for every token id%2 — click to see the vectors of this sentence.</source>
        <translation>为每个词元 id 查出一个 d_model = %1 个数的可学习向量%2 — 点击查看这个句子的向量。</translation>
    </message>
    <message>
        <source>, multiplied by √d_model</source>
        <translation>，乘以 √d_model</translation>
    </message>
    <message>
        <source>Relative position bias (inside attention)</source>
        <translation>相对位置偏置（在注意力内部）</translation>
    </message>
    <message>
        <source>Rotary positions (inside attention)</source>
        <translation>旋转位置（在注意力内部）</translation>
    </message>
    <message>
        <source>+ Positional encoding (learned table)</source>
        <translation>+ 位置编码（可学习的表）</translation>
    </message>
    <message>
        <source>+ Positional encoding (sinusoids)</source>
        <translation>+ 位置编码（正弦）</translation>
    </message>
    <message>
        <source>nothing added here · %1 buckets</source>
        <translation>此处不加任何东西 · %1 个桶</translation>
    </message>
    <message>
        <source>nothing added here · rope_theta = %1</source>
        <translation>此处不加任何东西 · rope_theta = %1</translation>
    </message>
    <message>
        <source>added to every position</source>
        <translation>加到每个位置上</translation>
    </message>
    <message>
        <source>T5&apos;s relative position bias adds nothing to the token vectors: each head adds a learned number for the bucket of the offset between key and query to their score, before the mask. The Positional encoding view shows each head&apos;s bias.</source>
        <translation>T5 的相对位置偏置不往词元向量上加任何东西：每个头按键与查询之间偏移所在的桶，把一个可学习的数加到它们的分数上，在掩码之前。“位置编码”视图显示每个头的偏置。</translation>
    </message>
    <message>
        <source>Rotary position embeddings (RoPE) add nothing to the token vectors: inside every attention block each head&apos;s queries and keys are rotated by an angle that grows with their position, so a score depends on how far apart two tokens are. The Positional encoding view shows the rotations.</source>
        <translation>旋转位置编码（RoPE）不往词元向量上加任何东西：在每个注意力块内部，每个头的查询和键按随位置增长的角度旋转，所以分数取决于两个词元相距多远。“位置编码”视图显示这些旋转。</translation>
    </message>
    <message>
        <source>Adds a learned vector for each position, so that attention can tell word order.</source>
        <translation>为每个位置加上一个可学习的向量，让注意力能分辨词序。</translation>
    </message>
    <message>
        <source>Adds sines and cosines of the position at d_model / 2 frequencies, so that attention can tell word order.</source>
        <translation>加上位置在 d_model / 2 个频率上的正弦和余弦，让注意力能分辨词序。</translation>
    </message>
    <message>
        <source>Over the embeddings: %1.</source>
        <translation>在嵌入上：%1。</translation>
    </message>
    <message>
        <source>Every position makes a query, a key and a value; each head mixes the values of all positions weighted by softmax(QKᵀ/√d_k) — click to open this layer&apos;s attention.</source>
        <translation>每个位置生成一个查询、一个键和一个值；每个头按 softmax(QKᵀ/√d_k) 加权混合所有位置的值 — 点击打开这一层的注意力。</translation>
    </message>
    <message>
        <source>Self-attention over the target in which the look-ahead mask hides later positions, so each position sees only itself and earlier ones — click to open it.</source>
        <translation>目标上的自注意力，前瞻掩码遮住后面的位置，所以每个位置只能看到自身和更早的位置 — 点击打开。</translation>
    </message>
    <message>
        <source>Queries from the decoder, keys and values from the encoder&apos;s output: where each target position reads the source — click to open it.</source>
        <translation>查询来自解码器，键和值来自编码器的输出：每个目标位置在源句中读哪里 — 点击打开。</translation>
    </message>
    <message>
        <source>

W_Q makes %1 query heads: Q %2; W_K and W_V make %3 key/value heads: K %4, V %5.</source>
        <translation>

W_Q 生成 %1 个查询头：Q %2；W_K 和 W_V 生成 %3 个键/值头：K %4，V %5。</translation>
    </message>
    <message>
        <source> %1: %2.</source>
        <translation> %1：%2。</translation>
    </message>
    <message>
        <source> Before QKᵀ, every query and key is rotated by its position (RoPE).</source>
        <translation> 在 QKᵀ 之前，每个查询和键按其位置旋转（RoPE）。</translation>
    </message>
    <message>
        <source>multi-head attention</source>
        <translation>多头注意力</translation>
    </message>
    <message>
        <source>multi-query attention</source>
        <translation>多查询注意力</translation>
    </message>
    <message>
        <source>grouped-query attention</source>
        <translation>分组查询注意力</translation>
    </message>
    <message>
        <source>%1 heads · scores %2</source>
        <translation>%1 个头 · 分数 %2</translation>
    </message>
    <message>
        <source>%1 Q heads, %2 K/V · scores %3</source>
        <translation>%1 个 Q 头，%2 个 K/V · 分数 %3</translation>
    </message>
    <message>
        <source>Feed forward (%1)</source>
        <translation>前馈网络 (%1)</translation>
    </message>
    <message>
        <source>A gated network at every position on its own: two Linear d_model → d_ff = %1, one through %2 (the gate), multiplied element by element with the other, then Linear back to d_model — click to see its activations.</source>
        <translation>每个位置各自使用一个门控网络：两个线性层 d_model → d_ff = %1，其中一个经过 %2（门），与另一个逐元素相乘，再由线性层回到 d_model — 点击查看它的激活。</translation>
    </message>
    <message>
        <source>Feed forward</source>
        <translation>前馈网络</translation>
    </message>
    <message>
        <source>The same two-layer network at every position on its own: Linear d_model → d_ff = %1, %2, Linear back to d_model — click to see its activations.</source>
        <translation>每个位置各自使用相同的两层网络：线性层 d_model → d_ff = %1，%2，再由线性层回到 d_model — 点击查看它的激活。</translation>
    </message>
    <message>
        <source>Pre-norm: before the sublayer, %1; the residual path bypasses it.</source>
        <translation>前置归一化：在子层之前，%1；残差路径绕过它。</translation>
    </message>
    <message>
        <source>Add</source>
        <translation>添加</translation>
    </message>
    <message>
        <source>The residual connection: adds the sublayer&apos;s output to its input.</source>
        <translation>残差连接：把子层的输出加到它的输入上。</translation>
    </message>
    <message>
        <source>Add &amp; Norm</source>
        <translation>残差与层归一化 (Add &amp; Norm)</translation>
    </message>
    <message>
        <source>Adds the sublayer&apos;s input back (the residual connection), then normalises each position&apos;s vector to mean 0 and variance 1 and scales and shifts it.</source>
        <translation>把子层的输入加回来（残差连接），然后把每个位置的向量归一化为均值 0、方差 1，再缩放和平移。</translation>
    </message>
    <message>
        <source>Masked</source>
        <translation>已掩码</translation>
    </message>
    <message>
        <source> (cross)</source>
        <translation>（交叉）</translation>
    </message>
    <message>
        <source>%1 (final)</source>
        <translation>%1（最终）</translation>
    </message>
    <message>
        <source>Over the whole stack&apos;s output: %1.</source>
        <translation>在整个栈的输出上：%1。</translation>
    </message>
    <message>
        <source>Linear (output projection)</source>
        <translation>线性层（输出投影）</translation>
    </message>
    <message>
        <source>Turns each position&apos;s vector into one score (logit) per token of the vocabulary — click to see the logits.</source>
        <translation>把每个位置的向量变成词表中每个词元一个分数（logit）— 点击查看 logits。</translation>
    </message>
    <message>
        <source>Softmax</source>
        <translation>Softmax</translation>
    </message>
    <message>
        <source>Turns each position&apos;s logits into probabilities that sum to 1; decoding picks the next token from them.</source>
        <translation>把每个位置的 logits 变成和为 1 的概率；解码从中选出下一个词元。</translation>
    </message>
    <message>
        <source>Output probabilities</source>
        <translation>输出概率</translation>
    </message>
    <message>
        <source>the next token, at every position</source>
        <translation>每个位置上的下一个词元</translation>
    </message>
    <message>
        <source>the token at every position (masked LM)</source>
        <translation>每个位置上的词元（掩码语言模型）</translation>
    </message>
    <message>
        <source>MLM transform</source>
        <translation>MLM 变换</translation>
    </message>
    <message>
        <source>Linear, %1, layer norm</source>
        <translation>线性层、%1、层归一化</translation>
    </message>
    <message>
        <source>BERT&apos;s masked-LM head: a Linear layer, the activation and a layer norm before the projection onto the vocabulary.</source>
        <translation>BERT 的掩码语言模型头：在投影到词表之前，是一个线性层、激活函数和层归一化。</translation>
    </message>
    <message>
        <source>Pooler: position 0 → Linear → tanh</source>
        <translation>池化：位置 0 → 线性层 → tanh</translation>
    </message>
    <message>
        <source>Mean over all positions</source>
        <translation>所有位置的平均</translation>
    </message>
    <message>
        <source>Takes the first position&apos;s vector (the [CLS] token) through a Linear layer and tanh: one vector per sentence.</source>
        <translation>把第一个位置的向量（[CLS] 词元）送入一个线性层和 tanh：每个句子一个向量。</translation>
    </message>
    <message>
        <source>Averages the encoder&apos;s output over the positions (padding included, as torch.mean does): one vector per sentence.</source>
        <translation>对编码器输出在各位置上取平均（包括填充，与 torch.mean 相同）：每个句子一个向量。</translation>
    </message>
    <message>
        <source>Classifier (Linear)</source>
        <translation>分类器（线性层）</translation>
    </message>
    <message>
        <source>%1 → %2 classes</source>
        <translation>%1 → %2 个类别</translation>
    </message>
    <message>
        <source>One score per class for the whole sentence.</source>
        <translation>整个句子每个类别一个分数。</translation>
    </message>
    <message>
        <source>Class probabilities</source>
        <translation>类别概率</translation>
    </message>
    <message>
        <source>memory %1 → K, V</source>
        <translation>记忆 %1 → K, V</translation>
    </message>
    <message>
        <source>token embeddings × √d_model</source>
        <translation>词元嵌入 × √d_model</translation>
    </message>
    <message>
        <source>token embeddings</source>
        <translation>词元嵌入</translation>
    </message>
    <message>
        <source>the first layer&apos;s input (rotary positions turn queries and keys inside attention instead)</source>
        <translation>第一层的输入（旋转位置编码则在注意力内部旋转查询和键）</translation>
    </message>
    <message>
        <source>+ positions%1: the first layer&apos;s input</source>
        <translation>+ 位置%1：第一层的输入</translation>
    </message>
    <message>
        <source>, normalised</source>
        <translation>，已归一化</translation>
    </message>
    <message>
        <source>As the model computed them: embedding rows of the ids, plus the positional encoding.</source>
        <translation>与模型计算的一致：各 id 的嵌入行，加上位置编码。</translation>
    </message>
    <message>
        <source>The first %1 of %2 positions: the logits of every position would take %3.</source>
        <translation>前 %1 个位置（共 %2 个）：所有位置的 logits 需要 %3。</translation>
    </message>
    <message>
        <source>the last stack&apos;s output</source>
        <translation>最后一个栈的输出</translation>
    </message>
    <message>
        <source>logits, one per vocabulary token</source>
        <translation>logits，词表中每个词元一个</translation>
    </message>
    <message>
        <source>logits</source>
        <translation>logits</translation>
    </message>
    <message>
        <source>probabilities (each row sums to 1)</source>
        <translation>概率（每行之和为 1）</translation>
    </message>
    <message>
        <source>input</source>
        <translation>输入</translation>
    </message>
    <message>
        <source>output</source>
        <translation>输出</translation>
    </message>
    <message>
        <source>the stack&apos;s output (the trace&apos;s hidden states)</source>
        <translation>该栈的输出（轨迹中的隐藏状态）</translation>
    </message>
    <message>
        <source>What goes into and out of this block is not in the trace (Trace::activations); %1</source>
        <translation>进出这个块的数据不在轨迹中（Trace::activations）；%1</translation>
    </message>
    <message>
        <source>only its shapes are known.</source>
        <translation>只知道它的形状。</translation>
    </message>
    <message>
        <source>the output shown is the stack&apos;s final output.</source>
        <translation>显示的输出是该栈的最终输出。</translation>
    </message>
    <message>
        <source>encoder self</source>
        <translation>编码器自注意力</translation>
    </message>
    <message>
        <source>decoder self</source>
        <translation>解码器自注意力</translation>
    </message>
    <message>
        <source>cross</source>
        <translation>交叉</translation>
    </message>
    <message>
        <source>Induction score (0–1)</source>
        <translation>归纳分数 (0–1)</translation>
    </message>
    <message>
        <source>On a random token sequence repeated twice: the attention of the second copy to the token after the earlier occurrence of the current token (1 = an induction head). One number per head, from the model, not the corpus</source>
        <translation>在重复两次的随机词元序列上：第二遍中对“当前词元上一次出现之后的那个词元”的注意力（1 = 归纳头）。每个头一个数，来自模型，而不是语料</translation>
    </message>
    <message>
        <source>Copying score (−1…1)</source>
        <translation>复制分数 (−1…1)</translation>
    </message>
    <message>
        <source>Σ Re λ / Σ |λ| over the eigenvalues of the head&apos;s OV circuit from tokens to logits: 1 = it raises the tokens it attends to. One number per head, from the weights</source>
        <translation>对该头从词元到 logits 的 OV 回路的特征值求 Σ Re λ / Σ |λ|：1 = 它提升它所关注的词元。每个头一个数，来自权重</translation>
    </message>
    <message>
        <source>%1 · layer %2 · head %3</source>
        <translation>%1 · 第 %2 层 · 头 %3</translation>
    </message>
    <message>
        <source>in order</source>
        <translation>顺序</translation>
    </message>
    <message>
        <source>reversed</source>
        <translation>逆序</translation>
    </message>
    <message>
        <source>broad</source>
        <translation>宽泛</translation>
    </message>
    <message>
        <source>sharp</source>
        <translation>集中</translation>
    </message>
    <message>
        <source>share of attention, 0–1</source>
        <translation>注意力份额，0–1</translation>
    </message>
    <message>
        <source>Entropy</source>
        <translation>熵</translation>
    </message>
    <message>
        <source>nats</source>
        <translation>奈特</translation>
    </message>
    <message>
        <source>Mean over query rows of −Σ p ln p, in nats: 0 = all attention on one key</source>
        <translation>各查询行 −Σ p ln p 的平均（奈特）：0 = 全部注意力在一个键上</translation>
    </message>
    <message>
        <source>Entropy 0–1</source>
        <translation>熵 0–1</translation>
    </message>
    <message>
        <source>Entropy divided by ln(number of unmasked keys): 0 = one key, 1 = spread evenly</source>
        <translation>熵除以 ln(未被掩码的键数)：0 = 一个键，1 = 均匀分布</translation>
    </message>
    <message>
        <source>Diagonal</source>
        <translation>对角线</translation>
    </message>
    <message>
        <source>Mean attention of position i on itself (self-attention)</source>
        <translation>位置 i 对自身的平均注意力（自注意力）</translation>
    </message>
    <message>
        <source>Previous</source>
        <translation>上一个</translation>
    </message>
    <message>
        <source>Previous token</source>
        <translation>前一个词元</translation>
    </message>
    <message>
        <source>Mean attention of position i on position i − 1 (self-attention)</source>
        <translation>位置 i 对位置 i − 1 的平均注意力（自注意力）</translation>
    </message>
    <message>
        <source>First</source>
        <translation>第一个</translation>
    </message>
    <message>
        <source>First token</source>
        <translation>第一个词元</translation>
    </message>
    <message>
        <source>Mean attention on the first key</source>
        <translation>第一个键上的平均注意力</translation>
    </message>
    <message>
        <source>BOS</source>
        <translation>BOS</translation>
    </message>
    <message>
        <source>Mean attention on the start token among the keys (an attention sink)</source>
        <translation>键中起始词元上的平均注意力（注意力汇聚点）</translation>
    </message>
    <message>
        <source>EOS</source>
        <translation>EOS</translation>
    </message>
    <message>
        <source>Mean attention on the end token among the keys (an attention sink)</source>
        <translation>键中结束词元上的平均注意力（注意力汇聚点）</translation>
    </message>
    <message>
        <source>Padding</source>
        <translation>填充</translation>
    </message>
    <message>
        <source>Mean attention on padding keys (0 while the padding mask is on)</source>
        <translation>填充键上的平均注意力（填充掩码开启时为 0）</translation>
    </message>
    <message>
        <source>Distance</source>
        <translation>距离</translation>
    </message>
    <message>
        <source>Mean distance</source>
        <translation>平均距离</translation>
    </message>
    <message>
        <source>positions</source>
        <translation>位置</translation>
    </message>
    <message>
        <source>Mean |i − j| weighted by the attention (self-attention): how far the head looks</source>
        <translation>按注意力加权的平均 |i − j|（自注意力）：这个头看得多远</translation>
    </message>
    <message>
        <source>Monotonic</source>
        <translation>单调性</translation>
    </message>
    <message>
        <source>Monotonic alignment</source>
        <translation>单调对齐</translation>
    </message>
    <message>
        <source>Kendall&apos;s τ, −1…1</source>
        <translation>Kendall τ，−1…1</translation>
    </message>
    <message>
        <source>Cross-attention: Kendall&apos;s τ between the query position and the attention&apos;s centre: +1 reads the source in order, −1 in reverse</source>
        <translation>交叉注意力：查询位置与注意力中心之间的 Kendall τ：+1 按顺序读源句，−1 逆序读</translation>
    </message>
    <message>
        <source>(i, i + %1)</source>
        <translation>(i, i + %1)</translation>
    </message>
    <message>
        <source>(2i, 2i + 1)</source>
        <translation>(2i, 2i + 1)</translation>
    </message>
    <message>
        <source>the prefix</source>
        <translation>前缀</translation>
    </message>
    <message>
        <source>kept and extended</source>
        <translation>保留并扩展</translation>
    </message>
    <message>
        <source>finished (end token)</source>
        <translation>已完成（结束词元）</translation>
    </message>
    <message>
        <source>cut at the length limit</source>
        <translation>在长度上限处截断</translation>
    </message>
    <message>
        <source>pruned: not among the best</source>
        <translation>已剪枝：不在最优之列</translation>
    </message>
    <message>
        <source>Encoder self · L%1</source>
        <translation>编码器自注意力 · L%1</translation>
    </message>
    <message>
        <source>Decoder self · L%1</source>
        <translation>解码器自注意力 · L%1</translation>
    </message>
    <message>
        <source>Cross · L%1</source>
        <translation>交叉 · L%1</translation>
    </message>
    <message>
        <source>%1 (f(input) = f(baseline))</source>
        <translation>%1 (f(输入) = f(基线))</translation>
    </message>
    <message>
        <source>Σ attributions %1 vs f(input) − f(baseline) = %2 − %3 = %4: gap %5</source>
        <translation>Σ 归因 %1 对比 f(输入) − f(基线) = %2 − %3 = %4：差距 %5</translation>
    </message>
    <message>
        <source>This model has no token head: it predicts no token, so there is no token to explain (the attention views show what it computes).</source>
        <translation>此模型没有词元头：它不预测词元，所以没有可解释的词元（注意力视图显示它计算的内容）。</translation>
    </message>
    <message>
        <source>n/a</source>
        <translation>不适用</translation>
    </message>
    <message>
        <source>no frames to write</source>
        <translation>没有可写入的帧</translation>
    </message>
    <message>
        <source>could not write %1</source>
        <translation>无法写入 %1</translation>
    </message>
    <message>
        <source>%1 → %2 tokens</source>
        <translation>%1 → %2 个词元</translation>
    </message>
    <message>
        <source>diag</source>
        <translation>对角</translation>
    </message>
    <message>
        <source>prev</source>
        <translation>前一个</translation>
    </message>
    <message>
        <source>first</source>
        <translation>首词元</translation>
    </message>
    <message>
        <source>pad</source>
        <translation>填充</translation>
    </message>
</context>
<context>
    <name>attnviz::Error</name>
    <message>
        <source>decoding was cancelled</source>
        <translation>解码已取消</translation>
    </message>
    <message>
        <source>a batch needs at least two sentences (one per line)</source>
        <translation>一批至少需要两个句子（每行一个）</translation>
    </message>
    <message>
        <source>the batch was cancelled</source>
        <translation>这一批已取消</translation>
    </message>
    <message>
        <source>loading the decode was cancelled</source>
        <translation>加载解码已取消</translation>
    </message>
    <message>
        <source>the folder&apos;s index lists no checkpoint</source>
        <translation>文件夹的索引中没有列出检查点</translation>
    </message>
    <message>
        <source>this trace did not keep the value vectors (keep_qkv): run again</source>
        <translation>此轨迹没有保存值向量（keep_qkv）：请重新运行</translation>
    </message>
    <message>
        <source>the run has no positions to explain</source>
        <translation>此次运行没有可解释的位置</translation>
    </message>
</context>
<context>
    <name>attnviz::Explanations</name>
    <message>
        <source>target padding mask</source>
        <translation>目标填充掩码</translation>
    </message>
    <message>
        <source>padding mask</source>
        <translation>填充掩码</translation>
    </message>
    <message>
        <source>source padding mask</source>
        <translation>源填充掩码</translation>
    </message>
    <message>
        <source>this model masks no padding keys</source>
        <translation>此模型不掩盖填充键</translation>
    </message>
    <message>
        <source>&lt;b&gt;the %1 is off&lt;/b&gt;: queries attend to padding keys too</source>
        <translation>&lt;b&gt;%1已关闭&lt;/b&gt;：查询也会关注填充键</translation>
    </message>
    <message>
        <source>padding keys are masked</source>
        <translation>填充键被掩码</translation>
    </message>
    <message>
        <source>padding keys would be masked, but this sentence has none: no cell is masked</source>
        <translation>填充键会被掩码，但这个句子没有填充：没有格子被掩码</translation>
    </message>
    <message>
        <source>&lt;b&gt;the look-ahead mask is off&lt;/b&gt;: every query also sees the keys to its right (the future); %1</source>
        <translation>&lt;b&gt;前瞻掩码已关闭&lt;/b&gt;：每个查询也能看到它右边的键（未来）；%1</translation>
    </message>
    <message>
        <source>keys to the right of the query (the future) are masked by the look-ahead mask; %1</source>
        <translation>查询右边的键（未来）被前瞻掩码遮住；%1</translation>
    </message>
    <message>
        <source>input tokens asking (queries)</source>
        <translation>提问的输入词元（查询）</translation>
    </message>
    <message>
        <source>input tokens answering (keys)</source>
        <translation>回答的输入词元（键）</translation>
    </message>
    <message>
        <source>target tokens fed to the decoder (queries)</source>
        <translation>送入解码器的目标词元（查询）</translation>
    </message>
    <message>
        <source>the tokens so far (queries)</source>
        <translation>目前为止的词元（查询）</translation>
    </message>
    <message>
        <source>the same target tokens (keys)</source>
        <translation>同样的这些目标词元（键）</translation>
    </message>
    <message>
        <source>the same tokens (keys)</source>
        <translation>同样的这些词元（键）</translation>
    </message>
    <message>
        <source>source tokens from the encoder output (keys and values)</source>
        <translation>来自编码器输出的源词元（键和值）</translation>
    </message>
    <message>
        <source>hatched cells are masked (probability exactly 0), dark unhatched cells are probabilities near 0 that the model chose</source>
        <translation>画斜线的格子被掩码（概率恰好为 0），没有斜线的深色格子是模型自己给出的接近 0 的概率</translation>
    </message>
    <message>
        <source>none is hatched</source>
        <translation>没有格子画斜线</translation>
    </message>
    <message>
        <source> (T5&apos;s relative position bias of head h, learned per bucket of the distance)</source>
        <translation>（T5 中头 h 的相对位置偏置，按距离所在的桶学习）</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:0&apos;&gt;&lt;b&gt;%1&lt;/b&gt; %2. Each cell (row &lt;i&gt;i&lt;/i&gt;, column &lt;i&gt;j&lt;/i&gt;) is how much query &lt;i&gt;i&lt;/i&gt; attends to key &lt;i&gt;j&lt;/i&gt;: score %3%4, masked cells get %5, and softmax turns every row into probabilities that sum to 1.&lt;/p&gt;</source>
        <translation>&lt;p style='margin:0'&gt;&lt;b&gt;%1&lt;/b&gt; %2。每个格子（第 &lt;i&gt;i&lt;/i&gt; 行，第 &lt;i&gt;j&lt;/i&gt; 列）表示查询 &lt;i&gt;i&lt;/i&gt; 对键 &lt;i&gt;j&lt;/i&gt; 的关注程度：分数 %3%4，被掩码的格子得到 %5，softmax 把每一行变成和为 1 的概率。&lt;/p&gt;</translation>
    </message>
    <message>
        <source>Dot-product attention</source>
        <translation>点积注意力</translation>
    </message>
    <message>
        <source>Scaled dot-product attention</source>
        <translation>缩放点积注意力</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:4px 0 0 0&apos;&gt;Rows: %1. Columns: %2. Here %3; %4.&lt;/p&gt;</source>
        <translation>&lt;p style='margin:4px 0 0 0'&gt;行：%1。列：%2。这里%3；%4。&lt;/p&gt;</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:4px 0 0 0&apos;&gt;Shapes: Q %1, K %2 → scores and probabilities [batch, heads, len_q, len_k] = %3; one head draws a [len_q, len_k] = %4 slice. d_model = %5, heads = %6, d_k = %7.&lt;/p&gt;</source>
        <translation>&lt;p style='margin:4px 0 0 0'&gt;形状：Q %1，K %2 → 分数和概率 [batch, heads, len_q, len_k] = %3；一个头画出其中 [len_q, len_k] = %4 的切片。d_model = %5，heads = %6，d_k = %7。&lt;/p&gt;</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::AnswersDialog</name>
    <message>
        <source>What the file does not say</source>
        <translation>文件没有说明的内容</translation>
    </message>
    <message>
        <source>&lt;b&gt;%1&lt;/b&gt; has no config. Its tensors follow &lt;b&gt;%2&lt;/b&gt;; what they tell is listed below. They cannot tell the rest: please give it (your training script has these numbers).</source>
        <translation>&lt;b&gt;%1&lt;/b&gt; 没有配置。它的张量符合 &lt;b&gt;%2&lt;/b&gt;；能从中读出的内容列在下面。其余的它们无法告诉我们：请填写（你的训练脚本里有这些数字）。</translation>
    </message>
    <message>
        <source>Read from the tensors&apos; names and shapes</source>
        <translation>从张量的名称和形状读出</translation>
    </message>
    <message>
        <source>choose…</source>
        <translation>选择…</translation>
    </message>
    <message>
        <source>0 to %1</source>
        <translation>0 到 %1</translation>
    </message>
    <message>
        <source>-1: the model has none; </source>
        <translation>-1：模型没有；</translation>
    </message>
    <message>
        <source>after each sublayer (post-norm: norm_first=False)</source>
        <translation>在每个子层之后（post-norm：norm_first=False）</translation>
    </message>
    <message>
        <source>, the default</source>
        <translation>，默认</translation>
    </message>
    <message>
        <source>before each sublayer (pre-norm: norm_first=True)</source>
        <translation>在每个子层之前（pre-norm：norm_first=True）</translation>
    </message>
    <message>
        <source> (the default)</source>
        <translation>（默认）</translation>
    </message>
    <message>
        <source>optional: tokens are shown as their ids without one</source>
        <translation>可选：没有它时词元显示为 id</translation>
    </message>
    <message>
        <source>Browse…</source>
        <translation>浏览…</translation>
    </message>
    <message>
        <source>A vocabulary</source>
        <translation>一个词表</translation>
    </message>
    <message>
        <source>Vocabularies and tokenizers (*.json *.txt *.pkl *.model *.bpe);;All files (*)</source>
        <translation>词表和分词器 (*.json *.txt *.pkl *.model *.bpe);;所有文件 (*)</translation>
    </message>
    <message>
        <source>a JSON list of tokens (index = id), a JSON object token → id (vocab.json), or a text file of one token a line (vocab.txt, torchtext&apos;s get_itos())</source>
        <translation>词元的 JSON 列表（下标 = id）、词元 → id 的 JSON 对象（vocab.json），或每行一个词元的文本文件（vocab.txt，torchtext 的 get_itos()）</translation>
    </message>
    <message>
        <source>Vocabulary:</source>
        <translation>词表：</translation>
    </message>
    <message>
        <source>The source&apos;s (or the only) vocabulary: a tokenizer, which serves both sides and types text as the tutorial did (nanoGPT&apos;s data/…/meta.pkl, llama2.c&apos;s tokenizer.model, a tokenizer.json, GPT-2&apos;s encoder.json or vocab.json with vocab.bpe or merges.txt beside it), or </source>
        <translation>源句的（或唯一的）词表：一个分词器，同时用于两侧，并像教程那样切分文本（nanoGPT 的 data/…/meta.pkl、llama2.c 的 tokenizer.model、tokenizer.json、GPT-2 的 encoder.json 或 vocab.json 及旁边的 vocab.bpe 或 merges.txt），或者</translation>
    </message>
    <message>
        <source>Target vocabulary:</source>
        <translation>目标词表：</translation>
    </message>
    <message>
        <source>Only when the target has its own vocabulary: </source>
        <translation>仅当目标有自己的词表时：</translation>
    </message>
    <message>
        <source>&amp;Remember for this file</source>
        <translation>为此文件记住(&amp;R)</translation>
    </message>
    <message>
        <source>Keeps the answers beside the model as %1, so that it opens directly next time</source>
        <translation>把这些回答作为 %1 保存在模型旁边，下次就能直接打开</translation>
    </message>
    <message>
        <source>&amp;Open</source>
        <translation>打开(&amp;O)</translation>
    </message>
    <message>
        <source>%1: %2 is not an id of the vocabulary of %3 tokens (0 to %4%5).</source>
        <translation>%1：%2 不是这个有 %3 个词元的词表中的 id（0 到 %4%5）。</translation>
    </message>
    <message>
        <source>, or -1 for none</source>
        <translation>，没有则为 -1</translation>
    </message>
    <message>
        <source>Every question above needs an answer</source>
        <translation>上面的每个问题都需要回答</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::ArchitectureDiagram</name>
    <message>
        <source>Open a model to see its architecture</source>
        <translation>打开一个模型以查看其架构</translation>
    </message>
    <message>
        <source>layer %1 of %2</source>
        <translation>第 %1 层，共 %2 层</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::ArchitectureView</name>
    <message>
        <source>What am I looking at?</source>
        <translation>我在看什么？</translation>
    </message>
    <message>
        <source>Press Run to see the numbers that flow through this block.</source>
        <translation>按“运行”查看流过这个块的数值。</translation>
    </message>
    <message>
        <source>Recording the activations</source>
        <translation>正在记录激活</translation>
    </message>
    <message>
        <source>&lt;b&gt;%1&lt;/b&gt;&lt;br&gt;&lt;i&gt;Recording what goes into and out of every sublayer for this input…&lt;/i&gt;</source>
        <translation>&lt;b&gt;%1&lt;/b&gt;&lt;br&gt;&lt;i&gt;正在记录这个输入进出每个子层的数据…&lt;/i&gt;</translation>
    </message>
    <message>
        <source>%1: not recorded</source>
        <translation>%1：未记录</translation>
    </message>
    <message>
        <source>input</source>
        <translation>输入</translation>
    </message>
    <message>
        <source>value</source>
        <translation>值</translation>
    </message>
    <message>
        <source>positions</source>
        <translation>位置</translation>
    </message>
    <message>
        <source>dimensions</source>
        <translation>维度</translation>
    </message>
    <message>
        <source>position</source>
        <translation>位置</translation>
    </message>
    <message>
        <source>dimension</source>
        <translation>维度</translation>
    </message>
    <message>
        <source>Input: %1</source>
        <translation>输入：%1</translation>
    </message>
    <message>
        <source>Output: %1</source>
        <translation>输出：%1</translation>
    </message>
    <message>
        <source>The model&apos;s architecture appears here once a model is open.</source>
        <translation>打开模型后，模型的架构会显示在这里。</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:0&apos;&gt;&lt;b&gt;%1&lt;/b&gt; — the %3 class of %2, %4. Read it from the bottom up, as in the paper “Attention Is All You Need”: token ids become vectors of d_model = %5 numbers, %10, then every layer refines each position&apos;s vector with %6 of d_k = %7) and a feed-forward network (d_ff = %8), each wrapped in a residual connection and %11 (%9).&lt;/p&gt;&lt;p style=&apos;margin:4px 0 0 0&apos;&gt;Blue labels are the tensors on each arrow, with this run&apos;s numbers (B sentences, S source and T target positions). Hover a block for what it does; click an attention block to open it, any other block to see its input and output as position × dimension heatmaps. ◀ ▶ choose the layer a stack shows.&lt;/p&gt;</source>
        <translation>&lt;p style='margin:0'&gt;&lt;b&gt;%1&lt;/b&gt; — %2 的%3类，%4。像论文《Attention Is All You Need》那样从下往上读：词元 id 变成 d_model = %5 个数的向量，%10，然后每一层用%6，d_k = %7）和一个前馈网络（d_ff = %8）细化每个位置的向量，每个子层都包在残差连接和%11（%9）之中。&lt;/p&gt;&lt;p style='margin:4px 0 0 0'&gt;蓝色标签是每条箭头上的张量，带有本次运行的数值（B 个句子，S 个源位置和 T 个目标位置）。悬停在一个块上查看它的作用；点击注意力块打开它，点击其他块以 位置 × 维度 热力图查看它的输入和输出。◀ ▶ 选择一个栈显示的层。&lt;/p&gt;</translation>
    </message>
    <message>
        <source>multi-head attention (%1 heads</source>
        <translation>多头注意力（%1 个头</translation>
    </message>
    <message>
        <source>%1 (%2 query heads sharing %3 key/value heads</source>
        <translation>%1（%2 个查询头共享 %3 个键/值头</translation>
    </message>
    <message>
        <source>pre-norm: the norm comes before each sublayer</source>
        <translation>前置归一化（pre-norm）：归一化在每个子层之前</translation>
    </message>
    <message>
        <source>post-norm: add, then norm, after each sublayer</source>
        <translation>后置归一化（post-norm）：每个子层之后先相加再归一化</translation>
    </message>
    <message>
        <source>positions are not added but turn each head&apos;s queries and keys inside attention (rotary)</source>
        <translation>位置不是加上去的，而是在注意力内部旋转每个头的查询和键（旋转位置编码）</translation>
    </message>
    <message>
        <source>positions are added</source>
        <translation>加上位置</translation>
    </message>
    <message>
        <source>an RMSNorm</source>
        <translation>RMSNorm</translation>
    </message>
    <message>
        <source>a layer norm</source>
        <translation>层归一化</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::AtlasTableModel</name>
    <message>
        <source>%1. Mean ± standard deviation over the corpus&apos;s sentences</source>
        <translation>%1。语料中各句子的均值 ± 标准差</translation>
    </message>
    <message>
        <source>Block</source>
        <translation>块</translation>
    </message>
    <message>
        <source>Layer</source>
        <translation>层</translation>
    </message>
    <message>
        <source>Head</source>
        <translation>头</translation>
    </message>
    <message>
        <source>Which attention: encoder self-, decoder self- or cross-attention</source>
        <translation>哪种注意力：编码器自注意力、解码器自注意力或交叉注意力</translation>
    </message>
    <message>
        <source>Layer (from 1)</source>
        <translation>层（从 1 开始）</translation>
    </message>
    <message>
        <source>Head (from 1)</source>
        <translation>头（从 1 开始）</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::AtlasView</name>
    <message>
        <source>What am I looking at?</source>
        <translation>我在看什么？</translation>
    </message>
    <message>
        <source>Corpus:</source>
        <translation>语料：</translation>
    </message>
    <message>
        <source>The sentences every head is measured on</source>
        <translation>衡量每个头所用的句子</translation>
    </message>
    <message>
        <source>Text file…</source>
        <translation>文本文件…</translation>
    </message>
    <message>
        <source>A UTF-8 text file: one sentence per line, or source&lt;TAB&gt;target pairs</source>
        <translation>UTF-8 文本文件：每行一个句子，或 源&lt;TAB&gt;目标 句对</translation>
    </message>
    <message>
        <source>Batch:</source>
        <translation>批次：</translation>
    </message>
    <message>
        <source>Sentences per forward pass: memory holds one batch&apos;s attention</source>
        <translation>每次前向传播的句子数：内存中保存一批的注意力</translation>
    </message>
    <message>
        <source>Cut long lines</source>
        <translation>截断长行</translation>
    </message>
    <message>
        <source>A line longer than the model&apos;s context is cut into consecutive chunks of at most the context, by tokens, without overlap; each chunk runs as a sentence of its own, with the start and end markers around it. Off: such a line is skipped.
An encoder-decoder&apos;s context is its source: each chunk is translated on its own; a source–target pair is never cut.</source>
        <translation>比模型上下文更长的行会按词元切成连续的、不超过上下文长度的块，互不重叠；每块作为一个独立的句子运行，前后加上起始和结束标记。关闭：跳过这样的行。
编码器-解码器的上下文是它的源句：每块单独翻译；源–目标句对永远不会被切开。</translation>
    </message>
    <message>
        <source>Run the corpus</source>
        <translation>运行语料</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>x:</source>
        <translation>x：</translation>
    </message>
    <message>
        <source>y:</source>
        <translation>y：</translation>
    </message>
    <message>
        <source>Export CSV…</source>
        <translation>导出 CSV…</translation>
    </message>
    <message>
        <source>The table: every head&apos;s mean and standard deviation per statistic</source>
        <translation>表：每项统计下每个头的均值和标准差</translation>
    </message>
    <message>
        <source>Heads over the corpus</source>
        <translation>语料上的各头</translation>
    </message>
    <message>
        <source>Choose a corpus and press Run the corpus: every head of the model becomes a point here.</source>
        <translation>选择一个语料并按“运行语料”：模型的每个头都会成为这里的一个点。</translation>
    </message>
    <message>
        <source>The heads whose statistics over the corpus are nearest the selected head&apos;s (0 = the same); click one to select it</source>
        <translation>语料上统计与所选头最接近的头（0 = 相同）；点击一个来选择它</translation>
    </message>
    <message>
        <source>Heads like this one</source>
        <translation>与此相似的头</translation>
    </message>
    <message>
        <source>Sentences by:</source>
        <translation>句子排序：</translation>
    </message>
    <message>
        <source>Strongest (double-click: the input of every view):</source>
        <translation>最强（双击：作为每个视图的输入）：</translation>
    </message>
    <message>
        <source>Weakest:</source>
        <translation>最弱：</translation>
    </message>
    <message>
        <source>Evidence</source>
        <translation>证据</translation>
    </message>
    <message>
        <source>Project this head&apos;s queries and keys</source>
        <translation>投影这个头的查询和键</translation>
    </message>
    <message>
        <source>Select a head, then press the button: its queries and keys over the corpus, projected on their two main directions (PCA).</source>
        <translation>选择一个头，然后按这个按钮：它在语料上的查询和键，投影到两个主方向上（PCA）。</translation>
    </message>
    <message>
        <source>Queries and keys</source>
        <translation>查询与键</translation>
    </message>
    <message>
        <source>Open training history…</source>
        <translation>打开训练历史…</translation>
    </message>
    <message>
        <source>A folder of checkpoints kept during training (the Train view&apos;s or attnviz-cli train --keep-dir)</source>
        <translation>训练过程中保存的检查点文件夹（“训练”视图的，或 attnviz-cli train --keep-dir 的）</translation>
    </message>
    <message>
        <source>Induction score (0–1)</source>
        <translation>归纳分数 (0–1)</translation>
    </message>
    <message>
        <source>Copying score (−1…1)</source>
        <translation>复制分数 (−1…1)</translation>
    </message>
    <message>
        <source>Held-out loss at each position (nats)</source>
        <translation>每个位置上的留出集损失（奈特）</translation>
    </message>
    <message>
        <source>The kept steps: moving it opens that checkpoint in every view</source>
        <translation>保留的步：拖动它会在每个视图中打开那个检查点</translation>
    </message>
    <message>
        <source>CSV…</source>
        <translation>CSV…</translation>
    </message>
    <message>
        <source>Every head&apos;s scores and statistics at every kept step</source>
        <translation>每个保留步上每个头的分数和统计</translation>
    </message>
    <message>
        <source>Animation…</source>
        <translation>动画…</translation>
    </message>
    <message>
        <source>An animated PNG: the heads&apos; induction scores, a frame per step</source>
        <translation>动画 PNG：各头的归纳分数，每步一帧</translation>
    </message>
    <message>
        <source>Open the checkpoints of a training run: every head&apos;s score over the steps, and a slider that opens any step in every view.</source>
        <translation>打开一次训练的检查点：每个头在各步上的分数，以及一个滑块，可在每个视图中打开任意一步。</translation>
    </message>
    <message>
        <source>Heads over training</source>
        <translation>训练过程中的各头</translation>
    </message>
    <message>
        <source>A corpus of sentences</source>
        <translation>一个句子语料</translation>
    </message>
    <message>
        <source>Text files (*.txt *.tsv);;All files (*)</source>
        <translation>文本文件 (*.txt *.tsv);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Export the head atlas</source>
        <translation>导出注意力头图谱</translation>
    </message>
    <message>
        <source>CSV (*.csv)</source>
        <translation>CSV (*.csv)</translation>
    </message>
    <message>
        <source>A folder of training checkpoints</source>
        <translation>训练检查点文件夹</translation>
    </message>
    <message>
        <source>Export the training history</source>
        <translation>导出训练历史</translation>
    </message>
    <message>
        <source>Export the induction scores as an animation</source>
        <translation>把归纳分数导出为动画</translation>
    </message>
    <message>
        <source>Animated PNG (*.png)</source>
        <translation>动画 PNG (*.png)</translation>
    </message>
    <message>
        <source>Reading the history was cancelled.</source>
        <translation>读取历史已取消。</translation>
    </message>
    <message>
        <source>The run was cancelled.</source>
        <translation>运行已取消。</translation>
    </message>
    <message>
        <source>The model&apos;s example sentences</source>
        <translation>模型的示例句子</translation>
    </message>
    <message>
        <source>%1&apos;s held-out sentences</source>
        <translation>%1 的留出句子</translation>
    </message>
    <message>
        <source>Training task “%1”: its held-out pairs</source>
        <translation>训练任务“%1”：它的留出句对</translation>
    </message>
    <message>
        <source>File: %1</source>
        <translation>文件：%1</translation>
    </message>
    <message>
        <source>Head atlas</source>
        <translation>注意力头图谱</translation>
    </message>
    <message>
        <source>%1: %2 sentences through the model in %3 batches (%4).</source>
        <translation>%1：%2 个句子分 %3 批通过模型（%4）。</translation>
    </message>
    <message>
        <source>%1 ms</source>
        <translation>%1 毫秒</translation>
    </message>
    <message>
        <source>%1 s</source>
        <translation>%1 秒</translation>
    </message>
    <message>
        <source>1 line</source>
        <translation>1 行</translation>
    </message>
    <message>
        <source>%1 lines</source>
        <translation>%1 行</translation>
    </message>
    <message>
        <source>%1 longer than the model&apos;s context of %2 tokens cut into %3 chunks, each run as a sentence.</source>
        <translation>%1 比模型 %2 个词元的上下文更长，被切成 %3 块，每块作为一个句子运行。</translation>
    </message>
    <message>
        <source>%1 longer than the model&apos;s context of %2 tokens skipped: Cut long lines runs them in chunks.</source>
        <translation>%1 比模型 %2 个词元的上下文更长，已跳过：“截断长行”会把它们分块运行。</translation>
    </message>
    <message>
        <source>line %1: %2</source>
        <translation>第 %1 行：%2</translation>
    </message>
    <message>
        <source>sentence %1: %2</source>
        <translation>句子 %1：%2</translation>
    </message>
    <message numerus="yes">
        <source>%n skipped (%1).</source>
        <translation><numerusform>跳过了 %n 个（%1）。</numerusform></translation>
    </message>
    <message>
        <source>The model is busy with another job: press Run the corpus again when it is done.</source>
        <translation>模型正忙于另一个任务：完成后请再按“运行语料”。</translation>
    </message>
    <message>
        <source>Running the corpus…</source>
        <translation>正在运行语料…</translation>
    </message>
    <message>
        <source>%1 %2</source>
        <translation>%1 %2</translation>
    </message>
    <message numerus="yes">
        <source>%n head(s) not shown: a statistic that does not apply to them (—)</source>
        <translation><numerusform>%n 个头未显示：这项统计对它们不适用（—）</numerusform></translation>
    </message>
    <message>
        <source>%1   distance %2</source>
        <translation>%1   距离 %2</translation>
    </message>
    <message>
        <source>%1 does not apply to this head (%2): choose another statistic.</source>
        <translation>%1 不适用于这个头（%2）：请选择另一项统计。</translation>
    </message>
    <message>
        <source>[chunk %1] %2</source>
        <translation>[块 %1] %2</translation>
    </message>
    <message>
        <source>Line %1 of the corpus</source>
        <translation>语料第 %1 行</translation>
    </message>
    <message>
        <source>Sentence %1 of the corpus</source>
        <translation>语料中的第 %1 句</translation>
    </message>
    <message>
        <source>, chunk %1 (the line is longer than the model&apos;s context: it runs in chunks and cannot be opened as the input)</source>
        <translation>，块 %1（这一行比模型的上下文更长：它分块运行，不能作为输入打开）</translation>
    </message>
    <message>
        <source>%1 “%2”
sentence %3, position %4</source>
        <translation>%1“%2”
句子 %3，位置 %4</translation>
    </message>
    <message>
        <source>Query</source>
        <translation>查询</translation>
    </message>
    <message>
        <source>Key</source>
        <translation>键</translation>
    </message>
    <message>
        <source>%1 (chunk %2)</source>
        <translation>%1（块 %2）</translation>
    </message>
    <message>
        <source>Principal component 1 (%1% of the variance)</source>
        <translation>主成分 1（方差的 %1%）</translation>
    </message>
    <message>
        <source>Component 2 (%1%)</source>
        <translation>成分 2 (%1%)</translation>
    </message>
    <message>
        <source>queries</source>
        <translation>查询</translation>
    </message>
    <message>
        <source>keys</source>
        <translation>键</translation>
    </message>
    <message>
        <source>%1 · layer %2 · head %3: %4 points from %5 sentences%6.</source>
        <translation>%1 · 第 %2 层 · 头 %3：来自 %5 个句子的 %4 个点%6。</translation>
    </message>
    <message>
        <source> (the first ones only)</source>
        <translation>（仅前几个）</translation>
    </message>
    <message>
        <source>Projecting…</source>
        <translation>投影中…</translation>
    </message>
    <message>
        <source>Reading the training history</source>
        <translation>正在读取训练历史</translation>
    </message>
    <message>
        <source>Wait until the running job is done.</source>
        <translation>请等待正在运行的任务完成。</translation>
    </message>
    <message>
        <source>Open a model first.</source>
        <translation>请先打开一个模型。</translation>
    </message>
    <message>
        <source>Reading the checkpoints…</source>
        <translation>正在读取检查点…</translation>
    </message>
    <message>
        <source>Position %1
step %2: %3 nats</source>
        <translation>位置 %1
第 %2 步：%3 奈特</translation>
    </message>
    <message>
        <source>pos %1</source>
        <translation>位置 %1</translation>
    </message>
    <message>
        <source>Training step</source>
        <translation>训练步</translation>
    </message>
    <message>
        <source>first position</source>
        <translation>第一个位置</translation>
    </message>
    <message>
        <source>last position</source>
        <translation>最后一个位置</translation>
    </message>
    <message>
        <source>L%1 H%2</source>
        <translation>L%1 H%2</translation>
    </message>
    <message>
        <source>%1 · layer %2 · head %3
step %4: %5</source>
        <translation>%1 · 第 %2 层 · 头 %3
第 %4 步：%5</translation>
    </message>
    <message>
        <source>Step %1 of %2 (checkpoint %3 of %4) · training loss %5 · held-out loss %6 nats per token</source>
        <translation>第 %1 步，共 %2 步（检查点 %3 / %4）· 训练损失 %5 · 留出集损失 %6 奈特/词元</translation>
    </message>
    <message>
        <source>Open a training history first.</source>
        <translation>请先打开训练历史。</translation>
    </message>
    <message>
        <source>Run a corpus first: there is no atlas to export.</source>
        <translation>请先运行语料：没有可导出的图谱。</translation>
    </message>
    <message>
        <source>Every head over training: %1</source>
        <translation>训练过程中的每个头：%1</translation>
    </message>
    <message>
        <source>%1 · task %2 · %3 checkpoints</source>
        <translation>%1 · 任务 %2 · %3 个检查点</translation>
    </message>
    <message>
        <source>Head atlas: every head over a corpus (mean ± sd)</source>
        <translation>注意力头图谱：语料上的每个头（均值 ± 标准差）</translation>
    </message>
    <message>
        <source>%1 · %2 sentences · %3</source>
        <translation>%1 · %2 个句子 · %3</translation>
    </message>
    <message>
        <source>&lt;p&gt;Every other view looks at one sentence. Here each &lt;b&gt;point is one head&lt;/b&gt; of one attention block, measured over a whole &lt;b&gt;corpus&lt;/b&gt; of sentences: its position is the mean of two statistics over the sentences, the bars show ± one standard deviation (a long bar: the head does different things on different sentences). Colours: the block (blue encoder self-attention, green decoder self-attention, orange cross-attention), darker for later layers. Two measures are the model&apos;s, one number per head without a spread: the &lt;i&gt;induction score&lt;/i&gt; (on a random sequence repeated twice, how much the second copy attends to the token after the same token&apos;s earlier occurrence: 1 = an induction head) and the &lt;i&gt;copying score&lt;/i&gt; of the head&apos;s weights (1 = it raises the very tokens it attends to).&lt;/p&gt;&lt;p&gt;Click a point or a row to select that head in every view; double-click to open it in the Attention view. &lt;i&gt;Heads like this one&lt;/i&gt; lists the heads whose statistics are nearest; &lt;i&gt;Evidence&lt;/i&gt; the sentences where the head&apos;s pattern is strongest and weakest (double-click one to make it the input); &lt;i&gt;Queries and keys&lt;/i&gt; projects the head&apos;s query and key vectors over the corpus on their two main directions: where queries sit near keys, the head attends.&lt;/p&gt;</source>
        <translation>&lt;p&gt;其他每个视图都只看一个句子。这里每个&lt;b&gt;点是一个注意力块中的一个头&lt;/b&gt;，在整个句子&lt;b&gt;语料&lt;/b&gt;上测量：它的位置是两项统计在各句子上的平均，误差线表示 ± 一个标准差（误差线长：这个头在不同句子上做不同的事）。颜色：所在的块（蓝色编码器自注意力，绿色解码器自注意力，橙色交叉注意力），越靠后的层颜色越深。有两个度量属于模型本身，每个头一个数、没有离散度：&lt;i&gt;归纳分数&lt;/i&gt;（在重复两次的随机序列上，第二遍对“同一词元上一次出现之后的那个词元”的注意力有多少：1 = 归纳头）和该头权重的&lt;i&gt;复制分数&lt;/i&gt;（1 = 它提升它所关注的那些词元）。&lt;/p&gt;&lt;p&gt;点击一个点或一行，在每个视图中选择那个头；双击在“注意力”视图中打开它。&lt;i&gt;与此相似的头&lt;/i&gt;列出统计最接近的头；&lt;i&gt;证据&lt;/i&gt;列出这个头的模式最强和最弱的句子（双击一个把它作为输入）；&lt;i&gt;查询与键&lt;/i&gt;把这个头在语料上的查询和键向量投影到两个主方向上：查询靠近键的地方，就是这个头关注的地方。&lt;/p&gt;</translation>
    </message>
    <message>
        <source>Open a model first: the atlas measures every head of it.</source>
        <translation>请先打开一个模型：图谱会衡量它的每个头。</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::AttentionView</name>
    <message>
        <source>What am I looking at?</source>
        <translation>我在看什么？</translation>
    </message>
    <message>
        <source>Show:</source>
        <translation>显示：</translation>
    </message>
    <message>
        <source>Probabilities</source>
        <translation>概率</translation>
    </message>
    <message>
        <source>Raw scores QKᵀ/√d_k</source>
        <translation>原始分数 QKᵀ/√d_k</translation>
    </message>
    <message>
        <source>Masked scores</source>
        <translation>掩码后的分数</translation>
    </message>
    <message>
        <source>Probabilities: after softmax. Raw scores: QKᵀ/√d_k before the mask (T5: QKᵀ plus the head&apos;s relative position bias). Masked scores: what softmax sees, masked cells set to the fill value.</source>
        <translation>概率：softmax 之后。原始分数：掩码之前的 QKᵀ/√d_k（T5：QKᵀ 加上该头的相对位置偏置）。掩码后的分数：softmax 看到的值，被掩码的格子设为填充值。</translation>
    </message>
    <message>
        <source>Colour scale:</source>
        <translation>颜色刻度：</translation>
    </message>
    <message>
        <source>0 … max</source>
        <translation>0 … 最大</translation>
    </message>
    <message>
        <source>0 … 1</source>
        <translation>0 … 1</translation>
    </message>
    <message>
        <source>Probabilities: stretch the colours to this matrix&apos;s largest value, or use the fixed range 0 … 1 (to compare heads)</source>
        <translation>概率：把颜色拉伸到这个矩阵的最大值，或者使用固定范围 0 … 1（便于比较各头）</translation>
    </message>
    <message>
        <source>QKᵀ/√d_k</source>
        <translation>QKᵀ/√d_k</translation>
    </message>
    <message>
        <source>QKᵀ·%1</source>
        <translation>QKᵀ·%1</translation>
    </message>
    <message>
        <source>%1·tanh(%2/%1)</source>
        <translation>%1·tanh(%2/%1)</translation>
    </message>
    <message>
        <source>Raw scores QKᵀ + bias</source>
        <translation>原始分数 QKᵀ + 偏置</translation>
    </message>
    <message>
        <source>Raw scores %1</source>
        <translation>原始分数 %1</translation>
    </message>
    <message>
        <source>No model loaded</source>
        <translation>没有加载模型</translation>
    </message>
    <message>
        <source>Type a source sentence and press Run</source>
        <translation>输入源句子并按“运行”</translation>
    </message>
    <message>
        <source>Type a prompt and press Run</source>
        <translation>输入提示并按“运行”</translation>
    </message>
    <message>
        <source>Type an input and press Run</source>
        <translation>输入文本并按“运行”</translation>
    </message>
    <message>
        <source>Press Run (Ctrl+Enter) to see the attention</source>
        <translation>按“运行”(Ctrl+Enter) 查看注意力</translation>
    </message>
    <message>
        <source>Open a model</source>
        <translation>打开模型</translation>
    </message>
    <message>
        <source>Attention heatmaps appear here after a run.</source>
        <translation>运行之后，注意力热力图会显示在这里。</translation>
    </message>
    <message>
        <source> · sentence&#xa0;%1&#xa0;of&#xa0;%2</source>
        <translation> · 第&#xa0;%1&#xa0;句，共&#xa0;%2&#xa0;句</translation>
    </message>
    <message>
        <source> · masks off: %1</source>
        <translation> · 关闭的掩码：%1</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::BarChart</name>
    <message>
        <source>probability</source>
        <translation>概率</translation>
    </message>
    <message>
        <source>Nothing to show yet</source>
        <translation>暂无可显示的内容</translation>
    </message>
    <message>
        <source>%1 (log scale)</source>
        <translation>%1（对数刻度）</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::BeamTreeWidget</name>
    <message>
        <source>Press Search to draw the beam search tree</source>
        <translation>按“搜索”画出束搜索树</translation>
    </message>
    <message>
        <source>prefix</source>
        <translation>前缀</translation>
    </message>
    <message>
        <source>step %1</source>
        <translation>第 %1 步</translation>
    </message>
    <message>
        <source>&lt;b&gt;%1&lt;/b&gt;&lt;br&gt;%2</source>
        <translation>&lt;b&gt;%1&lt;/b&gt;&lt;br&gt;%2</translation>
    </message>
    <message>
        <source>&lt;br&gt;log P(“%1”) = %2 (p = %3)&lt;br&gt;score (Σ log P) = %4</source>
        <translation>&lt;br&gt;log P(“%1”) = %2 (p = %3)&lt;br&gt;分数 (Σ log P) = %4</translation>
    </message>
    <message>
        <source>&lt;br&gt;rank %1, ranked by score / %2^%3 = %4</source>
        <translation>&lt;br&gt;排名 %1，按 分数 / %2^%3 = %4 排序</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::CellBreakdownWidget</name>
    <message>
        <source>Query %1 “%2” × key %3 “%4”, head %5: how this attention weight was made</source>
        <translation>查询 %1“%2”× 键 %3“%4”，头 %5：这个注意力权重是怎么得来的</translation>
    </message>
    <message>
        <source>Click a cell of the heatmap to see how it was computed</source>
        <translation>点击热力图的一个格子，查看它是如何计算的</translation>
    </message>
    <message>
        <source>① q_i: the query vector of position %1 in this head (d_k = %2 numbers, from x·W_Q)</source>
        <translation>① q_i：这个头中位置 %1 的查询向量（d_k = %2 个数，来自 x·W_Q）</translation>
    </message>
    <message>
        <source>② k_j: the key vector of position %1 (from x·W_K)</source>
        <translation>② k_j：位置 %1 的键向量（来自 x·W_K）</translation>
    </message>
    <message>
        <source>③ q_i ⊙ k_j: multiplied number by number (red: the two agree in sign, blue: they disagree)</source>
        <translation>③ q_i ⊙ k_j：逐个数相乘（红色：两者符号相同，蓝色：符号相反）</translation>
    </message>
    <message>
        <source>④ Σ (q_i ⊙ k_j) = q_i · k_j = %1</source>
        <translation>④ Σ (q_i ⊙ k_j) = q_i · k_j = %1</translation>
    </message>
    <message>
        <source>÷ √d_k = ÷ √%1 = ÷ %2</source>
        <translation>÷ √d_k = ÷ √%1 = ÷ %2</translation>
    </message>
    <message>
        <source>no scaling (this family does not divide by √d_k)</source>
        <translation>不缩放（该模型族不除以 √d_k）</translation>
    </message>
    <message>
        <source>× %1 (the family&apos;s scale)</source>
        <translation>× %1（该模型族的缩放）</translation>
    </message>
    <message>
        <source> + relative bias of head %1, bucket %2 of j − i = %3: %4</source>
        <translation> + 头 %1 的相对偏置，j − i = %3 的桶 %2：%4</translation>
    </message>
    <message>
        <source>, soft-capped: %1·tanh(s / %1)</source>
        <translation>，软上限：%1·tanh(s / %1)</translation>
    </message>
    <message>
        <source>⑤ %1%2%3  →  score = %4    (the trace gives %5 %6)</source>
        <translation>⑤ %1%2%3  →  分数 = %4    （轨迹给出的是 %5 %6）</translation>
    </message>
    <message>
        <source>⑥ the mask: this cell IS masked — its score is replaced by %1 before the softmax, so its probability is 0</source>
        <translation>⑥ 掩码：这个格子确实被掩码了 — 它的分数在 softmax 之前被替换为 %1，所以它的概率为 0</translation>
    </message>
    <message>
        <source>⑥ the mask: this cell is not masked — the score goes into the softmax as it is</source>
        <translation>⑥ 掩码：这个格子没有被掩码 — 分数原样进入 softmax</translation>
    </message>
    <message>
        <source>⑦ softmax over row %1: p = e^(s − max) / Σ e^(s − max) = %2 / %3 = %4    (the trace gives %5 %6)</source>
        <translation>⑦ 第 %1 行的 softmax：p = e^(s − max) / Σ e^(s − max) = %2 / %3 = %4    （轨迹给出的是 %5 %6）</translation>
    </message>
    <message>
        <source>⑧ the head&apos;s output for query %1: Σ_j p_ij · v_j — each key&apos;s value vector (d_v = %2, from x·W_V) weighted by its probability</source>
        <translation>⑧ 这个头对查询 %1 的输出：Σ_j p_ij · v_j — 每个键的值向量（d_v = %2，来自 x·W_V）按其概率加权</translation>
    </message>
    <message>
        <source>= output_i</source>
        <translation>= output_i</translation>
    </message>
    <message>
        <source>The heads&apos; outputs are put side by side and go through the output projection W_O; then come the residual add and the norm.</source>
        <translation>各头的输出拼接在一起，经过输出投影 W_O；然后是残差相加和归一化。</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::CellView</name>
    <message>
        <source>What am I looking at?</source>
        <translation>我在看什么？</translation>
    </message>
    <message>
        <source>Press Run to see the attention</source>
        <translation>按“运行”查看注意力</translation>
    </message>
    <message>
        <source>One attention weight taken apart appears here after a run.</source>
        <translation>运行之后，拆解开的一个注意力权重会显示在这里。</translation>
    </message>
    <message>
        <source>Head %1 — click a cell</source>
        <translation>头 %1 — 点击一个格子</translation>
    </message>
    <message>
        <source>Head %1 (%2) — click a cell</source>
        <translation>头 %1 (%2) — 点击一个格子</translation>
    </message>
    <message>
        <source>The mean of the heads has no vectors of its own: head 1 is shown ([ and ] choose another head).</source>
        <translation>各头平均没有自己的向量：显示头 1（用 [ 和 ] 选择其他头）。</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:0&apos;&gt;An attention weight is made in a few steps. The layer&apos;s input x (one row of d_model = %1 numbers per position) is projected into a query, a key and a value per head: Q = x·W&lt;sub&gt;Q&lt;/sub&gt;, K = x·W&lt;sub&gt;K&lt;/sub&gt;, V = x·W&lt;sub&gt;V&lt;/sub&gt; (d_k = %2 numbers each). The score of query i and key j is q&lt;sub&gt;i&lt;/sub&gt;·k&lt;sub&gt;j&lt;/sub&gt;/√d&lt;sub&gt;k&lt;/sub&gt;; masked cells are replaced by %3; softmax turns row i into probabilities; and the head&apos;s output for query i is those probabilities times the value vectors.&lt;/p&gt;&lt;p style=&apos;margin:4px 0 0 0&apos;&gt;Click any cell of the heatmap: every number on the right is recomputed here from the vectors the trace kept and the model&apos;s config, and checked (✓) against the score and probability the trace gives, from the pass&apos;s own scoring rule and each row&apos;s softmax statistics. Shapes: Q %4, K and V %5.&lt;/p&gt;%6%7</source>
        <translation>&lt;p style='margin:0'&gt;一个注意力权重分几步得到。该层的输入 x（每个位置一行 d_model = %1 个数）在每个头中被投影为查询、键和值：Q = x·W&lt;sub&gt;Q&lt;/sub&gt;，K = x·W&lt;sub&gt;K&lt;/sub&gt;，V = x·W&lt;sub&gt;V&lt;/sub&gt;（各 d_k = %2 个数）。查询 i 与键 j 的分数是 q&lt;sub&gt;i&lt;/sub&gt;·k&lt;sub&gt;j&lt;/sub&gt;/√d&lt;sub&gt;k&lt;/sub&gt;；被掩码的格子替换为 %3；softmax 把第 i 行变成概率；这个头对查询 i 的输出就是这些概率乘以值向量。&lt;/p&gt;&lt;p style='margin:4px 0 0 0'&gt;点击热力图的任意格子：右边的每个数都在这里由轨迹保存的向量和模型配置重新计算，并与轨迹给出的分数和概率核对（✓）——轨迹按前向计算自己的打分规则和每行的 softmax 统计量给出它们。形状：Q %4，K 和 V %5。&lt;/p&gt;%6%7</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:4px 0 0 0&apos;&gt;Grouped-query attention: %1, so k&lt;sub&gt;j&lt;/sub&gt; and v&lt;sub&gt;j&lt;/sub&gt; below are that key/value head&apos;s.&lt;/p&gt;</source>
        <translation>&lt;p style='margin:4px 0 0 0'&gt;分组查询注意力：%1，所以下面的 k&lt;sub&gt;j&lt;/sub&gt; 和 v&lt;sub&gt;j&lt;/sub&gt; 是那个键/值头的。&lt;/p&gt;</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:4px 0 0 0&apos;&gt;Rotary positions: q&lt;sub&gt;i&lt;/sub&gt; and k&lt;sub&gt;j&lt;/sub&gt; are shown as the model used them, already turned by their positions (the Positional encoding view shows how).&lt;/p&gt;</source>
        <translation>&lt;p style='margin:4px 0 0 0'&gt;旋转位置编码：q&lt;sub&gt;i&lt;/sub&gt; 和 k&lt;sub&gt;j&lt;/sub&gt; 按模型使用时的样子显示，已经按各自的位置旋转过（“位置编码”视图展示了如何旋转）。&lt;/p&gt;</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::CompareView</name>
    <message>
        <source>What am I looking at?</source>
        <translation>我在看什么？</translation>
    </message>
    <message>
        <source>&lt;b&gt;B&lt;/b&gt; is A with:</source>
        <translation>&lt;b&gt;B&lt;/b&gt; 是 A 加上：</translation>
    </message>
    <message>
        <source>padding mask</source>
        <translation>填充掩码</translation>
    </message>
    <message>
        <source>look-ahead mask</source>
        <translation>前瞻掩码</translation>
    </message>
    <message>
        <source>Untick to let B attend to padding</source>
        <translation>取消勾选，让 B 关注填充</translation>
    </message>
    <message>
        <source>Untick to let B&apos;s decoder see later positions: the leak</source>
        <translation>取消勾选，让 B 的解码器看到后面的位置：即泄漏</translation>
    </message>
    <message>
        <source>source:</source>
        <translation>源：</translation>
    </message>
    <message>
        <source>B&apos;s source sentence (change one word)</source>
        <translation>B 的源句子（改一个词）</translation>
    </message>
    <message>
        <source>target:</source>
        <translation>目标：</translation>
    </message>
    <message>
        <source>A&apos;s target (teacher-forced)</source>
        <translation>A 的目标（教师强制）</translation>
    </message>
    <message>
        <source>this target (teacher-forced):</source>
        <translation>此目标（教师强制）：</translation>
    </message>
    <message>
        <source>B&apos;s own greedy decode</source>
        <translation>B 自己的贪心解码</translation>
    </message>
    <message>
        <source>A&apos;s target keeps the rows aligned; B&apos;s own decode shows how the output changes; a target you type is a branch of the decode</source>
        <translation>A 的目标让各行保持对齐；B 自己的解码显示输出如何变化；你输入的目标是解码的一个分支</translation>
    </message>
    <message>
        <source>B&apos;s target words (after the start token)</source>
        <translation>B 的目标词（在起始词元之后）</translation>
    </message>
    <message>
        <source>heads:</source>
        <translation>头：</translation>
    </message>
    <message>
        <source>B&apos;s interventions on single heads</source>
        <translation>B 对单个头的干预</translation>
    </message>
    <message>
        <source>Switch off the selected head</source>
        <translation>关闭所选的头</translation>
    </message>
    <message>
        <source>B: the selected head&apos;s output (its slice of the context) becomes 0</source>
        <translation>B：所选头的输出（它在上下文中的切片）变为 0</translation>
    </message>
    <message>
        <source>Scale its softmax: T =</source>
        <translation>缩放它的 softmax：T =</translation>
    </message>
    <message>
        <source>B: softmax(scores / T) for the selected head; T &gt; 1 flattens, T &lt; 1 sharpens</source>
        <translation>B：所选头的 softmax(分数 / T)；T &gt; 1 更平缓，T &lt; 1 更尖锐</translation>
    </message>
    <message>
        <source>Remove all</source>
        <translation>全部移除</translation>
    </message>
    <message>
        <source>Compare A and B</source>
        <translation>比较 A 与 B</translation>
    </message>
    <message>
        <source>Reset B to A</source>
        <translation>把 B 重置为 A</translation>
    </message>
    <message>
        <source>Show:</source>
        <translation>显示：</translation>
    </message>
    <message>
        <source>Attention of the selected head</source>
        <translation>所选头的注意力</translation>
    </message>
    <message>
        <source>Attention rollout to this layer (an approximation)</source>
        <translation>到这一层的注意力 rollout（近似）</translation>
    </message>
    <message>
        <source>Rollout multiplies the layers&apos; mean attention with the residual connection folded in (½·A + ½·I): a rough picture of how much each input position reaches each position, not what the model computes</source>
        <translation>Rollout 把各层的平均注意力（并入残差连接：½·A + ½·I）相乘：粗略地描绘每个输入位置能传到每个位置多少，而不是模型实际计算的内容</translation>
    </message>
    <message>
        <source>switched off</source>
        <translation>已关闭</translation>
    </message>
    <message>
        <source>softmax temperature %1</source>
        <translation>softmax 温度 %1</translation>
    </message>
    <message>
        <source>(no head is changed)</source>
        <translation>（没有头被改变）</translation>
    </message>
    <message>
        <source>Running A and B…</source>
        <translation>正在运行 A 和 B…</translation>
    </message>
    <message>
        <source>Comparing A and B</source>
        <translation>正在比较 A 与 B</translation>
    </message>
    <message>
        <source>Busy: press Compare again when the current job is done.</source>
        <translation>忙碌中：当前任务完成后请再按“比较”。</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:0&apos;&gt;&lt;b&gt;A&lt;/b&gt; is the current run; &lt;b&gt;B&lt;/b&gt; the same with the changes above: a mask switched off (the look-ahead mask off shows the leak: B&apos;s decoder rows attend to later positions), another source sentence (change one word), another target (a branch of the decode), or heads switched off (their output becomes 0) or with their softmax temperature-scaled. Both are run again from their tokens; the right heatmap is &lt;b&gt;B − A&lt;/b&gt; (red: B attends more, blue: less) over the rows and columns they share.&lt;/p&gt;&lt;p style=&apos;margin:4px 0 0 0&apos;&gt;Below: how the output changed, and how much every head&apos;s attention moved (mean |B − A|) in the kind shown — an intervention changes only the layers after it. &lt;i&gt;Rollout&lt;/i&gt; multiplies the layers&apos; mean attention with the residual connection folded in (½·A + ½·I), an approximation of how much each input position reaches each position.&lt;/p&gt;</source>
        <translation>&lt;p style='margin:0'&gt;&lt;b&gt;A&lt;/b&gt; 是当前运行；&lt;b&gt;B&lt;/b&gt; 是加上上面这些改动的同一运行：关闭一个掩码（关闭前瞻掩码会显示泄漏：B 的解码器行关注后面的位置）、换一个源句子（改一个词）、换一个目标（解码的一个分支），或者关闭某些头（它们的输出变为 0）或对它们的 softmax 做温度缩放。两者都从各自的词元重新运行；右边的热力图是 &lt;b&gt;B − A&lt;/b&gt;（红色：B 关注更多，蓝色：更少），覆盖它们共有的行和列。&lt;/p&gt;&lt;p style='margin:4px 0 0 0'&gt;下面：输出如何变化，以及在所显示的注意力种类中每个头的注意力移动了多少（平均 |B − A|）— 一次干预只改变它之后的层。&lt;i&gt;Rollout&lt;/i&gt; 把各层的平均注意力（并入残差连接：½·A + ½·I）相乘，近似表示每个输入位置能传到每个位置多少。&lt;/p&gt;</translation>
    </message>
    <message>
        <source>Press Run first: A is the current run.</source>
        <translation>请先按“运行”：A 是当前运行。</translation>
    </message>
    <message>
        <source>Running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>Press “Compare A and B”.</source>
        <translation>请按“比较 A 与 B”。</translation>
    </message>
    <message>
        <source>rollout</source>
        <translation>rollout</translation>
    </message>
    <message>
        <source>probability</source>
        <translation>概率</translation>
    </message>
    <message>
        <source>rollout to layer %1</source>
        <translation>rollout 到第 %1 层</translation>
    </message>
    <message>
        <source>A (the current run)</source>
        <translation>A（当前运行）</translation>
    </message>
    <message>
        <source>B (the variation)</source>
        <translation>B（变体）</translation>
    </message>
    <message>
        <source>B − A</source>
        <translation>B − A</translation>
    </message>
    <message>
        <source>B is the same as A: change something above (a mask, a word, a head) and press Compare.</source>
        <translation>B 与 A 相同：请在上面改点什么（一个掩码、一个词、一个头），然后按“比较”。</translation>
    </message>
    <message>
        <source>largest change in this matrix: %1.</source>
        <translation>此矩阵中最大的变化：%1。</translation>
    </message>
    <message>
        <source>A and B differ in length; their common %1 × %2 cells are compared (labels a→b where the tokens differ). Largest change: %3.</source>
        <translation>A 和 B 长度不同；比较它们共同的 %1 × %2 个格子（词元不同处标为 a→b）。最大变化：%3。</translation>
    </message>
    <message>
        <source>layer %1</source>
        <translation>第 %1 层</translation>
    </message>
    <message>
        <source>head %1</source>
        <translation>头 %1</translation>
    </message>
    <message>
        <source>Mean |B − A| per head · %1</source>
        <translation>每个头的平均 |B − A| · %1</translation>
    </message>
    <message>
        <source>mean |B − A|</source>
        <translation>平均 |B − A|</translation>
    </message>
    <message>
        <source>layer</source>
        <translation>层</translation>
    </message>
    <message>
        <source>head</source>
        <translation>头</translation>
    </message>
    <message>
        <source>&lt;b&gt;B&apos;s own decode:&lt;/b&gt; %1</source>
        <translation>&lt;b&gt;B 自己的解码：&lt;/b&gt;%1</translation>
    </message>
    <message>
        <source>&lt;b&gt;Most probable next token at each position, A → B&lt;/b&gt; (%1 of %2 differ):</source>
        <translation>&lt;b&gt;每个位置上概率最高的下一个词元，A → B&lt;/b&gt;（%2 个中有 %1 个不同）：</translation>
    </message>
    <message>
        <source>&lt;b&gt;Class probabilities, A → B:&lt;/b&gt; %1</source>
        <translation>&lt;b&gt;类别概率，A → B：&lt;/b&gt;%1</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::DecodingStepsModel</name>
    <message>
        <source>Position %1 holds “%2”; the masked-LM head&apos;s most probable token there is “%3” (p = %4)</source>
        <translation>位置 %1 是“%2”；掩码语言模型头在那里概率最高的词元是“%3”(p = %4)</translation>
    </message>
    <message>
        <source>(next: %1?)</source>
        <translation>（下一个：%1？）</translation>
    </message>
    <message>
        <source>%1 ✎</source>
        <translation>%1 ✎</translation>
    </message>
    <message>
        <source>forced</source>
        <translation>强制</translation>
    </message>
    <message>
        <source>“%1” was forced by the target prefix; the model itself gave it p = %2 (its choice would have been “%3”, p = %4)</source>
        <translation>“%1”是由目标前缀强制指定的；模型自己给它的概率是 p = %2（模型自己会选“%3”，p = %4）</translation>
    </message>
    <message>
        <source>Position %1 has not chosen its next token yet; the argmax is “%2” (p = %3). Step forward (→) to take it, or pick another token on the right.</source>
        <translation>位置 %1 还没有选择下一个词元；argmax 是“%2”(p = %3)。前进一步 (→) 采用它，或在右边选另一个词元。</translation>
    </message>
    <message>
        <source>You picked “%1” (p = %2) instead of the argmax “%3” (p = %4)</source>
        <translation>你选择了“%1”(p = %2)，而不是 argmax“%3”(p = %4)</translation>
    </message>
    <message>
        <source>Position %1 read “%2” and chose “%3” (p = %4)</source>
        <translation>位置 %1 读到“%2”，选择了“%3”(p = %4)</translation>
    </message>
    <message>
        <source>#</source>
        <translation>#</translation>
    </message>
    <message>
        <source>Input token</source>
        <translation>输入词元</translation>
    </message>
    <message>
        <source>Input</source>
        <translation>输入</translation>
    </message>
    <message>
        <source>Prediction</source>
        <translation>预测</translation>
    </message>
    <message>
        <source>Next token</source>
        <translation>下一个词元</translation>
    </message>
    <message>
        <source>p</source>
        <translation>p</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::DecodingView</name>
    <message>
        <source>What am I looking at?</source>
        <translation>我在看什么？</translation>
    </message>
    <message>
        <source>Select a step to see its next-token probabilities and attention rows</source>
        <translation>选择一步，查看它的下一个词元概率和注意力行</translation>
    </message>
    <message>
        <source>◀ Step back</source>
        <translation>◀ 后退一步</translation>
    </message>
    <message>
        <source>Step forward ▶</source>
        <translation>前进一步 ▶</translation>
    </message>
    <message>
        <source>Decode to the end</source>
        <translation>解码到结尾</translation>
    </message>
    <message>
        <source>Reset</source>
        <translation>重置</translation>
    </message>
    <message>
        <source>Remove the newest token (←)</source>
        <translation>移除最新的词元 (←)</translation>
    </message>
    <message>
        <source>Append the most probable next token (→)</source>
        <translation>追加概率最高的下一个词元 (→)</translation>
    </message>
    <message>
        <source>Keep appending the argmax until the end token (End)</source>
        <translation>不断追加 argmax，直到结束词元 (End)</translation>
    </message>
    <message>
        <source>Go back to the target prefix (Home)</source>
        <translation>回到目标前缀 (Home)</translation>
    </message>
    <message>
        <source>Log scale</source>
        <translation>对数刻度</translation>
    </message>
    <message>
        <source>A logarithmic probability axis: the alternatives of a confident model stay visible</source>
        <translation>对数概率轴：即使模型很确定，其他候选也仍然可见</translation>
    </message>
    <message>
        <source>Use this token</source>
        <translation>使用这个词元</translation>
    </message>
    <message>
        <source>Branch: keep the steps before this one and continue with the selected token instead (double-click a row or a bar, or Enter)</source>
        <translation>分支：保留这一步之前的步骤，改用所选的词元继续（双击一行或一个条形，或按 Enter）</translation>
    </message>
    <message>
        <source>then decode to the end</source>
        <translation>然后解码到结尾</translation>
    </message>
    <message>
        <source>Why this token?</source>
        <translation>为什么是这个词元？</translation>
    </message>
    <message>
        <source>Explain the selected token at this step: what every layer predicted (the logit lens) and what every head and block adds to its logit (right-click a bar for the same)</source>
        <translation>解释这一步所选的词元：每一层预测了什么（logit 透镜），以及每个头和每个块为它的 logit 贡献了什么（右键点击一个条形效果相同）</translation>
    </message>
    <message>
        <source>&lt;b&gt;Class probabilities&lt;/b&gt;</source>
        <translation>&lt;b&gt;类别概率&lt;/b&gt;</translation>
    </message>
    <message>
        <source>Why “%1”?</source>
        <translation>为什么是“%1”？</translation>
    </message>
    <message>
        <source>Outputs</source>
        <translation>输出</translation>
    </message>
    <message>
        <source>Decoding</source>
        <translation>解码</translation>
    </message>
    <message>
        <source>Outputs · position %1 (“%2”)</source>
        <translation>输出 · 位置 %1（“%2”）</translation>
    </message>
    <message>
        <source>Decoding · step %1 of %2 · after “%3”</source>
        <translation>解码 · 第 %1 步，共 %2 步 · 在“%3”之后</translation>
    </message>
    <message>
        <source>Step %1 of %2: after “%3” the model chooses “%4” (p = %5).</source>
        <translation>第 %1 步，共 %2 步：在“%3”之后，模型选择“%4”(p = %5)。</translation>
    </message>
    <message>
        <source>Cross-attention rows</source>
        <translation>交叉注意力行</translation>
    </message>
    <message>
        <source>Self-attention rows</source>
        <translation>自注意力行</translation>
    </message>
    <message>
        <source>Encoder self-attention rows</source>
        <translation>编码器自注意力行</translation>
    </message>
    <message>
        <source>Decoding works on one sentence. Batch mode is on (Masks view): press Run to go back to one sentence.</source>
        <translation>解码只针对一个句子。批次模式已开启（“掩码”视图）：按“运行”回到单个句子。</translation>
    </message>
    <message>
        <source>Press Run to see the outputs.</source>
        <translation>按“运行”查看输出。</translation>
    </message>
    <message>
        <source>The model&apos;s outputs appear here after a run.</source>
        <translation>运行之后，模型的输出会显示在这里。</translation>
    </message>
    <message>
        <source>Masked-LM predictions at every position: select a position on the left to see its most probable tokens.</source>
        <translation>每个位置上的掩码语言模型预测：在左边选择一个位置，查看它概率最高的词元。</translation>
    </message>
    <message>
        <source>The classifier&apos;s answer: “%1” (p = %2).</source>
        <translation>分类器的回答：“%1”(p = %2)。</translation>
    </message>
    <message>
        <source>This model outputs hidden states only: there is no token or class to predict. The attention views show what it computes.</source>
        <translation>此模型只输出隐藏状态：没有要预测的词元或类别。注意力视图显示它计算的内容。</translation>
    </message>
    <message>
        <source>Finished: the end token was chosen.</source>
        <translation>已完成：选择了结束词元。</translation>
    </message>
    <message numerus="yes">
        <source>Stopped after %n new tokens, the limit of one run.</source>
        <translation><numerusform>生成 %n 个新词元后停止，这是一次运行的上限。</numerusform></translation>
    </message>
    <message numerus="yes">
        <source>Stopped: the text fills the model&apos;s %n positions.</source>
        <translation><numerusform>已停止：文本占满了模型的 %n 个位置。</numerusform></translation>
    </message>
    <message>
        <source>Finished.</source>
        <translation>已完成。</translation>
    </message>
    <message>
        <source>Next: “%1”, p = %2. Step forward (→) to take it, or pick another token.</source>
        <translation>下一个：“%1”，p = %2。前进一步 (→) 采用它，或者选另一个词元。</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:0&apos;&gt;&lt;b&gt;An encoder-only model&lt;/b&gt; reads the whole input at once; there is nothing to decode. %1%2%3&lt;/p&gt;</source>
        <translation>&lt;p style='margin:0'&gt;&lt;b&gt;仅编码器模型&lt;/b&gt;一次读取整个输入；没有可解码的内容。%1%2%3&lt;/p&gt;</translation>
    </message>
    <message>
        <source>Its masked-LM head turns every position&apos;s output vector into probabilities over the vocabulary %1: select a position to see its top predictions (put [MASK]-like tokens in the input to ask for them). </source>
        <translation>它的掩码语言模型头把每个位置的输出向量变成词表 %1 上的概率：选择一个位置查看它的最高预测（在输入中放入类似 [MASK] 的词元来提问）。</translation>
    </message>
    <message>
        <source>Its classifier pools the positions (%1) into one vector [1, d_model] = %2 and gives probabilities over %3 classes. </source>
        <translation>它的分类器把各位置（%1）汇聚成一个向量 [1, d_model] = %2，并给出 %3 个类别上的概率。</translation>
    </message>
    <message>
        <source>their mean</source>
        <translation>它们的平均</translation>
    </message>
    <message>
        <source>the first position</source>
        <translation>第一个位置</translation>
    </message>
    <message>
        <source>This one has no output head: its result is the hidden states [1, len, d_model] = %1.</source>
        <translation>这个模型没有输出头：它的结果是隐藏状态 [1, len, d_model] = %1。</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:0&apos;&gt;&lt;b&gt;Greedy decoding&lt;/b&gt;: %1each step feeds the newest token at position t and computes only that position&apos;s query row, attending to the keys and values cached from earlier steps. The output projection and softmax give the next-token probabilities %2; greedy decoding appends the argmax, and you may pick another token to branch.&lt;/p&gt;&lt;p style=&apos;margin:4px 0 0 0&apos;&gt;Shapes at position %8 (t = %3 in the formulas, which count from 0 as PyTorch does): the new self-attention row is [batch, heads, 1, t + 1] = %4%5, for each of %6 decoder layers; the logits are [1, vocab] = %7.&lt;/p&gt;</source>
        <translation>&lt;p style='margin:0'&gt;&lt;b&gt;贪心解码&lt;/b&gt;：%1每一步把最新的词元放在位置 t 输入，只计算这个位置的查询行，关注之前各步缓存下来的键和值。输出投影和 softmax 给出下一个词元的概率 %2；贪心解码追加 argmax，你也可以选另一个词元来分支。&lt;/p&gt;&lt;p style='margin:4px 0 0 0'&gt;位置 %8 上的形状（公式中 t = %3，与 PyTorch 一样从 0 计数）：新的自注意力行是 [batch, heads, 1, t + 1] = %4%5，%6 个解码器层每层一行；logits 是 [1, vocab] = %7。&lt;/p&gt;</translation>
    </message>
    <message>
        <source>the encoder runs once; then </source>
        <translation>编码器运行一次；然后</translation>
    </message>
    <message>
        <source>the prompt runs in one pass; then </source>
        <translation>提示一次性运行；然后</translation>
    </message>
    <message>
        <source>p(y&lt;sub&gt;t+1&lt;/sub&gt; | y&lt;sub&gt;≤t&lt;/sub&gt;, x) = softmax(h&lt;sub&gt;t&lt;/sub&gt;W&lt;sub&gt;out&lt;/sub&gt;ᵀ)</source>
        <translation>p(y&lt;sub&gt;t+1&lt;/sub&gt; | y&lt;sub&gt;≤t&lt;/sub&gt;, x) = softmax(h&lt;sub&gt;t&lt;/sub&gt;W&lt;sub&gt;out&lt;/sub&gt;ᵀ)</translation>
    </message>
    <message>
        <source>p(y&lt;sub&gt;t+1&lt;/sub&gt; | y&lt;sub&gt;≤t&lt;/sub&gt;) = softmax(h&lt;sub&gt;t&lt;/sub&gt;W&lt;sub&gt;out&lt;/sub&gt;ᵀ)</source>
        <translation>p(y&lt;sub&gt;t+1&lt;/sub&gt; | y&lt;sub&gt;≤t&lt;/sub&gt;) = softmax(h&lt;sub&gt;t&lt;/sub&gt;W&lt;sub&gt;out&lt;/sub&gt;ᵀ)</translation>
    </message>
    <message>
        <source>, the new cross-attention row [batch, heads, 1, len_src] = %1</source>
        <translation>，新的交叉注意力行 [batch, heads, 1, len_src] = %1</translation>
    </message>
    <message>
        <source>No steps to show</source>
        <translation>没有可显示的步骤</translation>
    </message>
    <message>
        <source>&lt;b&gt;Masked-LM predictions at position %1&lt;/b&gt; (input “%2”)</source>
        <translation>&lt;b&gt;位置 %1 上的掩码语言模型预测&lt;/b&gt;（输入“%2”）</translation>
    </message>
    <message>
        <source>&lt;b&gt;Next-token probabilities after position %1&lt;/b&gt; (input “%2”)</source>
        <translation>&lt;b&gt;位置 %1 之后的下一个词元概率&lt;/b&gt;（输入“%2”）</translation>
    </message>
    <message>
        <source>L%1 H%2</source>
        <translation>L%1 H%2</translation>
    </message>
    <message>
        <source>layer · head ↓</source>
        <translation>层 · 头 ↓</translation>
    </message>
    <message>
        <source>keys → · source tokens</source>
        <translation>键 → · 源词元</translation>
    </message>
    <message>
        <source>keys → · input tokens</source>
        <translation>键 → · 输入词元</translation>
    </message>
    <message>
        <source>keys → · tokens so far</source>
        <translation>键 → · 目前的词元</translation>
    </message>
    <message>
        <source>row</source>
        <translation>行</translation>
    </message>
    <message>
        <source>key</source>
        <translation>键</translation>
    </message>
    <message>
        <source>&lt;b&gt;Self-attention row of position %2&lt;/b&gt; (query “%3”), every layer and head</source>
        <translation>&lt;b&gt;位置 %2 的自注意力行&lt;/b&gt;（查询“%3”），每一层和每个头</translation>
    </message>
    <message>
        <source>&lt;b&gt;New %1 row at position %2&lt;/b&gt; (query “%3”), every layer and head</source>
        <translation>&lt;b&gt;位置 %2 上新的%1行&lt;/b&gt;（查询“%3”），每一层和每个头</translation>
    </message>
    <message>
        <source>cross-attention</source>
        <translation>交叉注意力</translation>
    </message>
    <message>
        <source>self-attention</source>
        <translation>自注意力</translation>
    </message>
    <message>
        <source>probability</source>
        <translation>概率</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::Engine</name>
    <message>
        <source> The model now runs on the CPU; restart attnviz to use the GPU again.</source>
        <translation> 模型现在在 CPU 上运行；重新启动 attnviz 才能再次使用 GPU。</translation>
    </message>
    <message>
        <source> The model stays on the GPU: the next run tries it again.</source>
        <translation> 模型留在 GPU 上：下次运行会再试一次。</translation>
    </message>
    <message>
        <source>Loading %1</source>
        <translation>正在加载 %1</translation>
    </message>
    <message>
        <source>Switching to %1</source>
        <translation>正在切换到 %1</translation>
    </message>
    <message>
        <source>source</source>
        <translation>源</translation>
    </message>
    <message>
        <source>input</source>
        <translation>输入</translation>
    </message>
    <message>
        <source>target prefix</source>
        <translation>目标前缀</translation>
    </message>
    <message>
        <source>prompt</source>
        <translation>提示</translation>
    </message>
    <message>
        <source>Running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>Decoding</source>
        <translation>解码中</translation>
    </message>
    <message>
        <source>sentence %1</source>
        <translation>句子 %1</translation>
    </message>
    <message>
        <source>Running a batch</source>
        <translation>正在运行一批</translation>
    </message>
    <message>
        <source>Rerunning with the new masks</source>
        <translation>正在用新的掩码重新运行</translation>
    </message>
    <message>
        <source>Step forward</source>
        <translation>前进一步</translation>
    </message>
    <message>
        <source>Step back</source>
        <translation>后退一步</translation>
    </message>
    <message>
        <source>Reset</source>
        <translation>重置</translation>
    </message>
    <message>
        <source>Branching</source>
        <translation>分支</translation>
    </message>
    <message>
        <source>Loading the decode</source>
        <translation>正在加载解码</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::ExplanationPanel</name>
    <message>
        <source>Show or hide the explanation (F1)</source>
        <translation>显示或隐藏解释 (F1)</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::HeadGrid</name>
    <message>
        <source>Decoder self · L88</source>
        <translation>解码器自注意力 · L88</translation>
    </message>
    <message>
        <source>Every head&apos;s attention on the probe sentence shows here</source>
        <translation>每个头在探针句子上的注意力显示在这里</translation>
    </message>
    <message>
        <source>head %1</source>
        <translation>头 %1</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::HeadStatsModel</name>
    <message>
        <source>encoder self</source>
        <translation>编码器自注意力</translation>
    </message>
    <message>
        <source>decoder self</source>
        <translation>解码器自注意力</translation>
    </message>
    <message>
        <source>cross</source>
        <translation>交叉</translation>
    </message>
    <message>
        <source>No single pattern dominates this head</source>
        <translation>这个头没有单一的主导模式</translation>
    </message>
    <message>
        <source>This head mostly: %1</source>
        <translation>这个头主要：%1</translation>
    </message>
    <message>
        <source>vs chosen</source>
        <translation>对比所选</translation>
    </message>
    <message>
        <source>Distance of this head&apos;s profile to the chosen head&apos;s (0 = the same): Find heads like this one</source>
        <translation>这个头的特征与所选头的距离（0 = 相同）：查找与此相似的头</translation>
    </message>
    <message>
        <source>Block</source>
        <translation>块</translation>
    </message>
    <message>
        <source>Layer</source>
        <translation>层</translation>
    </message>
    <message>
        <source>Head</source>
        <translation>头</translation>
    </message>
    <message>
        <source>Pattern</source>
        <translation>模式</translation>
    </message>
    <message>
        <source>Which attention: encoder self-, decoder self- or cross-attention</source>
        <translation>哪种注意力：编码器自注意力、解码器自注意力或交叉注意力</translation>
    </message>
    <message>
        <source>Layer (from 1)</source>
        <translation>层（从 1 开始）</translation>
    </message>
    <message>
        <source>Head (from 1)</source>
        <translation>头（从 1 开始）</translation>
    </message>
    <message>
        <source>What the head mostly does (the Overview&apos;s badge)</source>
        <translation>这个头主要做什么（“总览”上的徽章）</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::HeadStatsView</name>
    <message>
        <source>What am I looking at?</source>
        <translation>我在看什么？</translation>
    </message>
    <message>
        <source>Show:</source>
        <translation>显示：</translation>
    </message>
    <message>
        <source>Every attention block</source>
        <translation>每个注意力块</translation>
    </message>
    <message>
        <source>Find heads like this one</source>
        <translation>查找与此相似的头</translation>
    </message>
    <message>
        <source>Sort every head by how close its statistics are to the selected head&apos;s</source>
        <translation>按统计与所选头的接近程度对每个头排序</translation>
    </message>
    <message>
        <source>Export CSV…</source>
        <translation>导出 CSV…</translation>
    </message>
    <message>
        <source>Export head statistics</source>
        <translation>导出注意力头统计</translation>
    </message>
    <message>
        <source>CSV (*.csv)</source>
        <translation>CSV (*.csv)</translation>
    </message>
    <message>
        <source>Could not write %1: %2</source>
        <translation>无法写入 %1：%2</translation>
    </message>
    <message>
        <source>Statistics of every head appear here after a run.</source>
        <translation>运行之后，每个头的统计会显示在这里。</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:0&apos;&gt;One row per head of every attention block, for sentence %1. Each number is a mean over the query rows that are not padding: &lt;b&gt;entropy&lt;/b&gt; −Σ p ln p (0 = all attention on one key; “0–1” divides by its largest possible value), the share of attention on the &lt;b&gt;diagonal&lt;/b&gt; (itself), the &lt;b&gt;previous&lt;/b&gt; token, the &lt;b&gt;first&lt;/b&gt; token, the start and end tokens (&lt;b&gt;BOS&lt;/b&gt;, &lt;b&gt;EOS&lt;/b&gt;: heads with nothing to do often park their attention there — “attention sinks”), &lt;b&gt;padding&lt;/b&gt;, the mean &lt;b&gt;distance&lt;/b&gt; |i − j| it looks over, and for cross-attention how &lt;b&gt;monotonic&lt;/b&gt; the alignment is (Kendall&apos;s τ: +1 reads the source in order, −1 in reverse). “—”: does not apply.&lt;/p&gt;&lt;p style=&apos;margin:4px 0 0 0&apos;&gt;Click a header to sort; select a row to show that head in the other views (double-click opens it); &lt;i&gt;Find heads like this one&lt;/i&gt; sorts by how close every head&apos;s numbers are to the selected head&apos;s. The Overview&apos;s badges name each head&apos;s strongest pattern.&lt;/p&gt;</source>
        <translation>&lt;p style='margin:0'&gt;句子 %1 上每个注意力块的每个头占一行。每个数都是对非填充查询行的平均：&lt;b&gt;熵&lt;/b&gt; −Σ p ln p（0 = 全部注意力在一个键上；“0–1”除以它可能的最大值），注意力落在&lt;b&gt;对角线&lt;/b&gt;（自身）、&lt;b&gt;前一个&lt;/b&gt;词元、&lt;b&gt;第一个&lt;/b&gt;词元、起始和结束词元（&lt;b&gt;BOS&lt;/b&gt;、&lt;b&gt;EOS&lt;/b&gt;：无事可做的头常把注意力停在这里 — 即“注意力汇聚点”）、&lt;b&gt;填充&lt;/b&gt;上的份额，它看过的平均&lt;b&gt;距离&lt;/b&gt; |i − j|，以及交叉注意力的对齐有多&lt;b&gt;单调&lt;/b&gt;（Kendall τ：+1 按顺序读源句，−1 逆序）。“—”：不适用。&lt;/p&gt;&lt;p style='margin:4px 0 0 0'&gt;点击表头排序；选择一行，在其他视图中显示那个头（双击打开它）；&lt;i&gt;查找与此相似的头&lt;/i&gt;按每个头的数值与所选头的接近程度排序。“总览”上的徽章标出每个头最强的模式。&lt;/p&gt;</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::HeatmapView</name>
    <message>
        <source>Zoom out (Ctrl+−, Ctrl+wheel)</source>
        <translation>缩小 (Ctrl+−, Ctrl+滚轮)</translation>
    </message>
    <message>
        <source>Fit</source>
        <translation>适应</translation>
    </message>
    <message>
        <source>Fit the matrix to the window (Ctrl+0)</source>
        <translation>让矩阵适应窗口 (Ctrl+0)</translation>
    </message>
    <message>
        <source>Zoom in (Ctrl++, Ctrl+wheel)</source>
        <translation>放大 (Ctrl++, Ctrl+滚轮)</translation>
    </message>
    <message>
        <source>fit to window</source>
        <translation>适应窗口</translation>
    </message>
    <message>
        <source>%1 px per cell</source>
        <translation>每格 %1 像素</translation>
    </message>
    <message>
        <source>max of the cells</source>
        <translation>格子的最大值</translation>
    </message>
    <message>
        <source>mean of the cells</source>
        <translation>格子的平均值</translation>
    </message>
    <message>
        <source>The matrix has more cells than the screen has pixels: each pixel shows the largest of its cells (a single sharp key stays visible) or their mean. Zoom in to see every cell.</source>
        <translation>矩阵的格子比屏幕的像素还多：每个像素显示它所含格子中的最大值（单个突出的键仍然看得见）或它们的平均值。放大可以看到每个格子。</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::HeatmapWidget</name>
    <message>
        <source>%1 · one label in %2</source>
        <translation>%1 · 每 %2 个显示一个标签</translation>
    </message>
    <message>
        <source>Nothing to show yet</source>
        <translation>暂无可显示的内容</translation>
    </message>
    <message>
        <source>Rendering…</source>
        <translation>渲染中…</translation>
    </message>
    <message>
        <source>%1 %2 · row %3 of %4</source>
        <translation>%1 %2 · 第 %3 行，共 %4 行</translation>
    </message>
    <message>
        <source>%1 %2 · column %3 of %4</source>
        <translation>%1 %2 · 第 %3 列，共 %4 列</translation>
    </message>
    <message>
        <source>Probability: %1</source>
        <translation>概率：%1</translation>
    </message>
    <message>
        <source>Raw score (before the mask): %1</source>
        <translation>原始分数（掩码前）：%1</translation>
    </message>
    <message>
        <source>Masked: yes</source>
        <translation>已掩码：是</translation>
    </message>
    <message>
        <source>Masked: no</source>
        <translation>已掩码：否</translation>
    </message>
    <message>
        <source>allowed</source>
        <translation>允许</translation>
    </message>
    <message>
        <source>masked</source>
        <translation>被掩码</translation>
    </message>
    <message>
        <source>The colour here is the share of %1 × %2 cells that are masked; zoom in for each cell.</source>
        <translation>这里的颜色是 %1 × %2 个格子中被掩码的比例；放大可看每个格子。</translation>
    </message>
    <message>
        <source>The colour here is the largest of %1 × %2 cells; zoom in for each cell.</source>
        <translation>这里的颜色是 %1 × %2 个格子中的最大值；放大可看每个格子。</translation>
    </message>
    <message>
        <source>The colour here is the mean of %1 × %2 cells; zoom in for each cell.</source>
        <translation>这里的颜色是 %1 × %2 个格子的平均值；放大可看每个格子。</translation>
    </message>
    <message>
        <source>pixel: the share of
%1 × %2 cells masked</source>
        <translation>像素：%1 × %2 个格子中
被掩码的比例</translation>
    </message>
    <message>
        <source>pixel: max of
%1 × %2 cells</source>
        <translation>像素：%1 × %2 个
格子的最大值</translation>
    </message>
    <message>
        <source>pixel: mean of
%1 × %2 cells</source>
        <translation>像素：%1 × %2 个
格子的平均值</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::LessonDialog</name>
    <message>
        <source>Export lesson as HTML</source>
        <translation>将课程页导出为 HTML</translation>
    </message>
    <message>
        <source>One HTML file that opens in any current web browser, offline and without a server: the sentence, every heatmap you keep with hover, the overview, the masks, the decoding steps and the explanations. It opens on the view and head you are looking at now.</source>
        <translation>一个 HTML 文件，可在任何现代网页浏览器中离线打开，无需服务器：句子、你保留的每张热力图（可悬停查看）、总览、掩码、解码步骤和解释。它会打开在你现在看的视图和头上。</translation>
    </message>
    <message>
        <source>Attention:</source>
        <translation>注意力：</translation>
    </message>
    <message>
        <source>Layers:</source>
        <translation>层数：</translation>
    </message>
    <message>
        <source>Heads:</source>
        <translation>头：</translation>
    </message>
    <message>
        <source>16 bits (within ±%1)</source>
        <translation>16 位（误差 ±%1 以内）</translation>
    </message>
    <message>
        <source>8 bits (within ±%1, half the size)</source>
        <translation>8 位（误差 ±%1 以内，大小减半）</translation>
    </message>
    <message>
        <source>How precisely each probability is stored in the page</source>
        <translation>每个概率在页面中保存的精度</translation>
    </message>
    <message>
        <source>Probabilities:</source>
        <translation>概率：</translation>
    </message>
    <message>
        <source>Size of the page:</source>
        <translation>页面大小：</translation>
    </message>
    <message>
        <source>Export…</source>
        <translation>导出…</translation>
    </message>
    <message>
        <source>Keep at least one kind of attention, one layer and one head.</source>
        <translation>请至少保留一种注意力、一层和一个头。</translation>
    </message>
    <message>
        <source>%1 MB</source>
        <translation>%1 MB</translation>
    </message>
    <message>
        <source>%1 MB: too large (at most %2 MB). Keep fewer layers, heads or kinds of attention, or store 8 bits.</source>
        <translation>%1 MB：太大（最多 %2 MB）。请保留更少的层、头或注意力种类，或者用 8 位保存。</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::MainWindow</name>
    <message>
        <source>[ and ] move across heads, M toggles the mean of the heads</source>
        <translation>[ 和 ] 在各头之间移动，M 切换各头平均</translation>
    </message>
    <message>
        <source>attnviz</source>
        <translation>attnviz</translation>
    </message>
    <message>
        <source>The model&apos;s structure: select an attention block or a head to show it</source>
        <translation>模型的结构：选择一个注意力块或一个头来显示它</translation>
    </message>
    <message>
        <source>Please note</source>
        <translation>请注意</translation>
    </message>
    <message>
        <source>Backend: %1</source>
        <translation>后端：%1</translation>
    </message>
    <message>
        <source>Model:</source>
        <translation>模型：</translation>
    </message>
    <message>
        <source>The bundled models and the files you opened; File › Open model… loads another</source>
        <translation>内置模型和你打开过的文件；“文件 › 打开模型…”可以加载其他模型</translation>
    </message>
    <message>
        <source>Open…</source>
        <translation>打开…</translation>
    </message>
    <message>
        <source>Open a model: .safetensors, or a PyTorch checkpoint (.pt, .pth, .bin) (Ctrl+O)</source>
        <translation>打开模型：.safetensors，或 PyTorch 检查点（.pt、.pth、.bin）(Ctrl+O)</translation>
    </message>
    <message>
        <source>Backend:</source>
        <translation>后端：</translation>
    </message>
    <message>
        <source>CPU</source>
        <translation>CPU</translation>
    </message>
    <message>
        <source>CUDA (GPU)</source>
        <translation>CUDA (GPU)</translation>
    </message>
    <message>
        <source>CUDA is unavailable: %1</source>
        <translation>CUDA 不可用：%1</translation>
    </message>
    <message>
        <source>Where the forward pass runs</source>
        <translation>前向传播在哪里运行</translation>
    </message>
    <message>
        <source>Examples</source>
        <translation>示例</translation>
    </message>
    <message>
        <source>Example sentences from the model&apos;s config</source>
        <translation>模型配置中的示例句子</translation>
    </message>
    <message>
        <source>Source:</source>
        <translation>源句：</translation>
    </message>
    <message>
        <source>A source sentence, words separated by spaces</source>
        <translation>一个源句子，词之间用空格分隔</translation>
    </message>
    <message>
        <source>Target prefix:</source>
        <translation>目标前缀：</translation>
    </message>
    <message>
        <source>optional: forces the first target tokens</source>
        <translation>可选：强制指定开头的目标词元</translation>
    </message>
    <message>
        <source>Run</source>
        <translation>运行</translation>
    </message>
    <message>
        <source>◀ Step back</source>
        <translation>◀ 后退一步</translation>
    </message>
    <message>
        <source>Remove the newest target token (←)</source>
        <translation>移除最新的目标词元 (←)</translation>
    </message>
    <message>
        <source>Step forward ▶</source>
        <translation>前进一步 ▶</translation>
    </message>
    <message>
        <source>Append the most probable next token (→)</source>
        <translation>追加概率最高的下一个词元 (→)</translation>
    </message>
    <message>
        <source>Reset</source>
        <translation>重置</translation>
    </message>
    <message>
        <source>Back to the target prefix, ready to step (Home)</source>
        <translation>回到目标前缀，准备单步 (Home)</translation>
    </message>
    <message>
        <source>Attention:</source>
        <translation>注意力：</translation>
    </message>
    <message>
        <source>Keys %1</source>
        <translation>键 %1</translation>
    </message>
    <message>
        <source>Layer:</source>
        <translation>层：</translation>
    </message>
    <message>
        <source>PgUp / PgDn</source>
        <translation>PgUp / PgDn</translation>
    </message>
    <message>
        <source>Head:</source>
        <translation>头：</translation>
    </message>
    <message>
        <source>Sentence:</source>
        <translation>句子：</translation>
    </message>
    <message>
        <source>Which sentence of the batch the views show</source>
        <translation>视图显示批次中的哪个句子</translation>
    </message>
    <message>
        <source>Colormap:</source>
        <translation>色图：</translation>
    </message>
    <message>
        <source>PgUp/PgDn layer · [ ] head · M mean · ← → step</source>
        <translation>PgUp/PgDn 层 · [ ] 头 · M 平均 · ← → 单步</translation>
    </message>
    <message>
        <source>Masks switched off in the Masks view: every view shows the leak</source>
        <translation>在“掩码”视图中关闭的掩码：每个视图都会显示泄漏</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Stop the running computation (Esc)</source>
        <translation>停止正在运行的计算 (Esc)</translation>
    </message>
    <message>
        <source>CPU threads: one per core</source>
        <translation>CPU 线程：每核一个</translation>
    </message>
    <message>
        <source>CPU threads: </source>
        <translation>CPU 线程：</translation>
    </message>
    <message>
        <source>How many threads the CPU backend computes on (default: one per core, %1 here). Fewer leave cores to other programs.</source>
        <translation>CPU 后端使用多少个线程计算（默认：每核一个，这里是 %1）。少一些可以把核留给其他程序。</translation>
    </message>
    <message>
        <source>No model</source>
        <translation>没有模型</translation>
    </message>
    <message>
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <source>&amp;Decode</source>
        <translation>解码(&amp;D)</translation>
    </message>
    <message>
        <source>&amp;View</source>
        <translation>视图(&amp;V)</translation>
    </message>
    <message>
        <source>&amp;Help</source>
        <translation>帮助(&amp;H)</translation>
    </message>
    <message>
        <source>&amp;Open model…</source>
        <translation>打开模型(&amp;O)…</translation>
    </message>
    <message>
        <source>Open model with a &amp;config file…</source>
        <translation>用配置文件打开模型(&amp;C)…</translation>
    </message>
    <message>
        <source>Open model with a &amp;names map…</source>
        <translation>用名称映射打开模型(&amp;N)…</translation>
    </message>
    <message>
        <source>Use a &amp;vocabulary file…</source>
        <translation>使用词表文件(&amp;V)…</translation>
    </message>
    <message>
        <source>The vocabulary %1 was trained with</source>
        <translation>%1 训练时使用的词表</translation>
    </message>
    <message>
        <source>Vocabularies (*.pkl *.model *.json *.txt *.vocab);;All files (*)</source>
        <translation>词表 (*.pkl *.model *.json *.txt *.vocab);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Open a model &amp;folder…</source>
        <translation>打开模型文件夹(&amp;F)…</translation>
    </message>
    <message>
        <source>Ctrl+Shift+O</source>
        <translation>Ctrl+Shift+O</translation>
    </message>
    <message>
        <source>Export view as &amp;PNG…</source>
        <translation>将视图导出为 &amp;PNG…</translation>
    </message>
    <message>
        <source>Ctrl+E</source>
        <translation>Ctrl+E</translation>
    </message>
    <message>
        <source>Export view as &amp;SVG…</source>
        <translation>将视图导出为 &amp;SVG…</translation>
    </message>
    <message>
        <source>Ctrl+Shift+E</source>
        <translation>Ctrl+Shift+E</translation>
    </message>
    <message>
        <source>Export view as P&amp;DF…</source>
        <translation>将视图导出为 P&amp;DF…</translation>
    </message>
    <message>
        <source>Ctrl+Shift+P</source>
        <translation>Ctrl+Shift+P</translation>
    </message>
    <message>
        <source>Export the decoding as &amp;frames…</source>
        <translation>将解码过程导出为帧(&amp;F)…</translation>
    </message>
    <message>
        <source>Ctrl+Shift+F</source>
        <translation>Ctrl+Shift+F</translation>
    </message>
    <message>
        <source>Export trace as &amp;NumPy…</source>
        <translation>将轨迹导出为 &amp;NumPy…</translation>
    </message>
    <message>
        <source>Ctrl+Shift+N</source>
        <translation>Ctrl+Shift+N</translation>
    </message>
    <message>
        <source>Export &amp;lesson as HTML…</source>
        <translation>将课程页导出为 HTML(&amp;L)…</translation>
    </message>
    <message>
        <source>&amp;Quit</source>
        <translation>退出(&amp;Q)</translation>
    </message>
    <message>
        <source>&amp;Run</source>
        <translation>运行(&amp;R)</translation>
    </message>
    <message>
        <source>Ctrl+Return</source>
        <translation>Ctrl+Return</translation>
    </message>
    <message>
        <source>Ctrl+Enter</source>
        <translation>Ctrl+Enter</translation>
    </message>
    <message>
        <source>F5</source>
        <translation>F5</translation>
    </message>
    <message>
        <source>Step &amp;forward</source>
        <translation>前进一步(&amp;F)</translation>
    </message>
    <message>
        <source>Alt+Right</source>
        <translation>Alt+Right</translation>
    </message>
    <message>
        <source>Step &amp;back</source>
        <translation>后退一步(&amp;B)</translation>
    </message>
    <message>
        <source>Alt+Left</source>
        <translation>Alt+Left</translation>
    </message>
    <message>
        <source>Decode to the &amp;end</source>
        <translation>解码到结尾(&amp;E)</translation>
    </message>
    <message>
        <source>Re&amp;set to the prefix</source>
        <translation>重置到前缀(&amp;S)</translation>
    </message>
    <message>
        <source>&amp;Cancel</source>
        <translation>取消(&amp;C)</translation>
    </message>
    <message>
        <source>Ctrl+%1</source>
        <translation>Ctrl+%1</translation>
    </message>
    <message>
        <source>Previous layer</source>
        <translation>上一层</translation>
    </message>
    <message>
        <source>Next layer</source>
        <translation>下一层</translation>
    </message>
    <message>
        <source>Previous head</source>
        <translation>上一个头</translation>
    </message>
    <message>
        <source>Next head</source>
        <translation>下一个头</translation>
    </message>
    <message>
        <source>Mean of the heads</source>
        <translation>各头平均</translation>
    </message>
    <message>
        <source>Zoom in</source>
        <translation>放大</translation>
    </message>
    <message>
        <source>Ctrl+=</source>
        <translation>Ctrl+=</translation>
    </message>
    <message>
        <source>Zoom out</source>
        <translation>缩小</translation>
    </message>
    <message>
        <source>Fit to window</source>
        <translation>适应窗口</translation>
    </message>
    <message>
        <source>Ctrl+0</source>
        <translation>Ctrl+0</translation>
    </message>
    <message>
        <source>Show e&amp;xplanations</source>
        <translation>显示解释(&amp;X)</translation>
    </message>
    <message>
        <source>&amp;Presentation mode (large fonts)</source>
        <translation>演示模式（大字体）(&amp;P)</translation>
    </message>
    <message>
        <source>&amp;Keyboard shortcuts</source>
        <translation>键盘快捷键(&amp;K)</translation>
    </message>
    <message>
        <source>&amp;About attnviz</source>
        <translation>关于 attnviz(&amp;A)</translation>
    </message>
    <message>
        <source>About attnviz</source>
        <translation>关于 attnviz</translation>
    </message>
    <message>
        <source>&lt;b&gt;attnviz&lt;/b&gt; %1 — see inside Transformers.&lt;br&gt;Every layer&apos;s and head&apos;s attention: scores, masks and probabilities, computed by attnviz&apos;s own core.</source>
        <translation>&lt;b&gt;attnviz&lt;/b&gt; %1 — 看清 Transformer 的内部。&lt;br&gt;每一层、每个头的注意力：分数、掩码和概率，由 attnviz 自己的核心计算。</translation>
    </message>
    <message>
        <source>&amp;Colormap</source>
        <translation>色图(&amp;C)</translation>
    </message>
    <message>
        <source>&amp;Language</source>
        <translation>语言(&amp;L)</translation>
    </message>
    <message>
        <source>attnviz will speak %1 from its next start on: quit and open it again. Your model and settings are kept.</source>
        <translation>attnviz 下次启动时将使用%1：请退出后重新打开。你的模型和设置会保留。</translation>
    </message>
    <message>
        <source>Settings are off (--no-settings): start attnviz with --lang %1 to see it in %2.</source>
        <translation>设置已关闭（--no-settings）：用 --lang %1 启动 attnviz 即可看到%2界面。</translation>
    </message>
    <message>
        <source>Language</source>
        <translation>语言</translation>
    </message>
    <message>
        <source> (no key: its tab or the View menu)</source>
        <translation>（无快捷键：用它的标签页或“视图”菜单）</translation>
    </message>
    <message>
        <source>&lt;p&gt;Single keys (1, 2, 3, M, [, ], arrows) act when the focus is not in a text field: Enter or Ctrl+Enter runs and hands the keys back to the view, Esc leaves a text field, Alt+← / Alt+→ step from anywhere.&lt;/p&gt;</source>
        <translation>&lt;p&gt;单键（1、2、3、M、[、]、方向键）在焦点不在文本框时生效：Enter 或 Ctrl+Enter 运行并把按键交还给视图，Esc 离开文本框，Alt+← / Alt+→ 在任何地方都能单步。&lt;/p&gt;</translation>
    </message>
    <message>
        <source>Keyboard shortcuts</source>
        <translation>键盘快捷键</translation>
    </message>
    <message>
        <source>No bundled model was found</source>
        <translation>没有找到内置模型</translation>
    </message>
    <message>
        <source>Looked in: %1.
Open a model of your own with File › Open model… (Ctrl+O).</source>
        <translation>查找过：%1。
用“文件 › 打开模型…”(Ctrl+O) 打开你自己的模型。</translation>
    </message>
    <message>
        <source>CUDA unavailable: %1</source>
        <translation>CUDA 不可用：%1</translation>
    </message>
    <message>
        <source>d_model %1 · %2 heads · %3</source>
        <translation>d_model %1 · %2 个头 · %3</translation>
    </message>
    <message>
        <source>%1+%2 layers</source>
        <translation>%1+%2 层</translation>
    </message>
    <message>
        <source>%1 encoder layers</source>
        <translation>%1 个编码器层</translation>
    </message>
    <message>
        <source>%1 decoder layers</source>
        <translation>%1 个解码器层</translation>
    </message>
    <message>
        <source>Mean of heads</source>
        <translation>各头平均</translation>
    </message>
    <message>
        <source>Head %1</source>
        <translation>头 %1</translation>
    </message>
    <message>
        <source>Reference translation: %1</source>
        <translation>参考译文：%1</translation>
    </message>
    <message>
        <source>(this model has no examples)</source>
        <translation>（此模型没有示例）</translation>
    </message>
    <message>
        <source>A source sentence</source>
        <translation>一个源句子</translation>
    </message>
    <message>
        <source>Encode the source and decode greedily to the end (Ctrl+Enter)</source>
        <translation>编码源句并贪心解码到结尾 (Ctrl+Enter)</translation>
    </message>
    <message>
        <source>Prompt:</source>
        <translation>提示：</translation>
    </message>
    <message>
        <source>The start of a text, words separated by spaces</source>
        <translation>一段文本的开头，词之间用空格分隔</translation>
    </message>
    <message>
        <source>The start of a text to continue</source>
        <translation>要续写的文本开头</translation>
    </message>
    <message>
        <source>Continue the prompt greedily to the end (Ctrl+Enter)</source>
        <translation>贪心地把提示续写到结尾 (Ctrl+Enter)</translation>
    </message>
    <message>
        <source>Input:</source>
        <translation>输入：</translation>
    </message>
    <message>
        <source>An input sentence, words separated by spaces</source>
        <translation>一个输入句子，词之间用空格分隔</translation>
    </message>
    <message>
        <source>An input text</source>
        <translation>一段输入文本</translation>
    </message>
    <message>
        <source>Run the encoder on the input (Ctrl+Enter)</source>
        <translation>在输入上运行编码器 (Ctrl+Enter)</translation>
    </message>
    <message>
        <source>%1 mask off</source>
        <translation>%1掩码已关闭</translation>
    </message>
    <message>
        <source>masks off: %1</source>
        <translation>关闭的掩码：%1</translation>
    </message>
    <message>
        <source>An unknown word in the %1</source>
        <translation>%1中有一个未知词</translation>
    </message>
    <message>
        <source>Unknown words in the %1</source>
        <translation>%1中的未知词</translation>
    </message>
    <message>
        <source>Forward pass: %1 ms</source>
        <translation>前向传播：%1 毫秒</translation>
    </message>
    <message>
        <source>source %1 · target %2 tokens</source>
        <translation>源 %1 · 目标 %2 个词元</translation>
    </message>
    <message>
        <source>%1 tokens</source>
        <translation>%1 个词元</translation>
    </message>
    <message>
        <source>%1 tokens (prompt %2)</source>
        <translation>%1 个词元（提示 %2）</translation>
    </message>
    <message>
        <source>input %1 tokens</source>
        <translation>输入 %1 个词元</translation>
    </message>
    <message>
        <source>batch %1 · %2 (padded)</source>
        <translation>批次 %1 · %2（已填充）</translation>
    </message>
    <message>
        <source>%1: %2</source>
        <translation>%1：%2</translation>
    </message>
    <message>
        <source>%1 of %2</source>
        <translation>%1 / %2</translation>
    </message>
    <message>
        <source>(no model)</source>
        <translation>（没有模型）</translation>
    </message>
    <message>
        <source>Open a model first (File › Open model…).</source>
        <translation>请先打开一个模型（文件 › 打开模型…）。</translation>
    </message>
    <message>
        <source>The prompt is longer than the model reads</source>
        <translation>提示比模型能读取的更长</translation>
    </message>
    <message>
        <source>It is %1 tokens long; the model takes %2 positions (its max_len). nanoGPT&apos;s sample.py keeps the last %3 tokens and goes on.</source>
        <translation>它有 %1 个词元长；模型只接受 %2 个位置（它的 max_len）。nanoGPT 的 sample.py 会保留最后 %3 个词元并继续。</translation>
    </message>
    <message>
        <source>Keep the last %1 tokens</source>
        <translation>保留最后 %1 个词元</translation>
    </message>
    <message>
        <source>Open a model</source>
        <translation>打开模型</translation>
    </message>
    <message>
        <source>Models (*.safetensors *.pt *.pth *.bin);;All files (*)</source>
        <translation>模型 (*.safetensors *.pt *.pth *.bin);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Its config</source>
        <translation>它的配置</translation>
    </message>
    <message>
        <source>JSON (*.json);;All files (*)</source>
        <translation>JSON (*.json);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Open a model folder (config.json with model.safetensors or pytorch_model.bin)</source>
        <translation>打开模型文件夹（config.json 以及 model.safetensors 或 pytorch_model.bin）</translation>
    </message>
    <message>
        <source>Its names follow no architecture attnviz knows</source>
        <translation>它的名称不符合 attnviz 已知的任何架构</translation>
    </message>
    <message>
        <source>Open %1 with a JSON map of its names (the button, or File › Open model with a names map…), or with a config (File › Open model with a config file…).</source>
        <translation>用它的名称 JSON 映射打开 %1（按钮，或“文件 › 用名称映射打开模型…”），或者用一个配置打开（“文件 › 用配置文件打开模型…”）。</translation>
    </message>
    <message>
        <source>Open with a names map…</source>
        <translation>用名称映射打开…</translation>
    </message>
    <message>
        <source>The map of %1&apos;s tensor names to their roles</source>
        <translation>%1 的张量名称到其角色的映射</translation>
    </message>
    <message>
        <source>Why the model needs one: </source>
        <translation>模型为什么需要它：</translation>
    </message>
    <message>
        <source>The names map was refused</source>
        <translation>名称映射被拒绝</translation>
    </message>
    <message>
        <source>This model names its own vocabulary</source>
        <translation>此模型指定了自己的词表</translation>
    </message>
    <message>
        <source>%1&apos;s config names its vocabulary; a vocabulary file is for a checkpoint opened without one (nanoGPT, llama2.c, minGPT, …) or a Hugging Face GPT-2, BERT or Llama folder.</source>
        <translation>%1 的配置已指定了它的词表；词表文件用于没有词表就打开的检查点（nanoGPT、llama2.c、minGPT …）或 Hugging Face 的 GPT-2、BERT、Llama 文件夹。</translation>
    </message>
    <message>
        <source>The vocabulary was refused</source>
        <translation>词表被拒绝</translation>
    </message>
    <message>
        <source>Not opened</source>
        <translation>未打开</translation>
    </message>
    <message>
        <source>%1 needs the answers to open.</source>
        <translation>打开 %1 需要这些回答。</translation>
    </message>
    <message>
        <source>Nothing to animate: decode a sentence first (Run).</source>
        <translation>没有可做成动画的内容：请先解码一个句子（运行）。</translation>
    </message>
    <message>
        <source>Could not create %1</source>
        <translation>无法创建 %1</translation>
    </message>
    <message>
        <source>Could not write %1</source>
        <translation>无法写入 %1</translation>
    </message>
    <message>
        <source>Could not write the animation: %1</source>
        <translation>无法写入动画：%1</translation>
    </message>
    <message>
        <source>Export failed</source>
        <translation>导出失败</translation>
    </message>
    <message>
        <source>Nothing to export yet: press Run first.</source>
        <translation>暂无可导出的内容：请先按“运行”。</translation>
    </message>
    <message>
        <source>Trace exported</source>
        <translation>轨迹已导出</translation>
    </message>
    <message>
        <source>NumPy files written to %1</source>
        <translation>NumPy 文件已写入 %1</translation>
    </message>
    <message>
        <source>Lesson exported</source>
        <translation>课程页已导出</translation>
    </message>
    <message>
        <source>%1: open it in any web browser, offline; share the one file</source>
        <translation>%1：可离线用任何网页浏览器打开；分享这一个文件即可</translation>
    </message>
    <message>
        <source>Export view as %1</source>
        <translation>将视图导出为 %1</translation>
    </message>
    <message>
        <source>%1 files (*.%2)</source>
        <translation>%1 文件 (*.%2)</translation>
    </message>
    <message>
        <source>View exported</source>
        <translation>视图已导出</translation>
    </message>
    <message>
        <source>Export the decoding as frames</source>
        <translation>将解码过程导出为帧</translation>
    </message>
    <message>
        <source>Write the frames (decoding-001.png …) and the animation into</source>
        <translation>把帧（decoding-001.png …）和动画写入</translation>
    </message>
    <message>
        <source>Decoding exported</source>
        <translation>解码过程已导出</translation>
    </message>
    <message>
        <source>%1 frames and decoding-animated.png (an animated PNG: open it in a web browser) in %2</source>
        <translation>%1 帧和 decoding-animated.png（动画 PNG：用网页浏览器打开），位于 %2</translation>
    </message>
    <message>
        <source>Export the trace as NumPy files into</source>
        <translation>把轨迹导出为 NumPy 文件，写入</translation>
    </message>
    <message>
        <source>Export lesson as HTML</source>
        <translation>将课程页导出为 HTML</translation>
    </message>
    <message>
        <source>%1-lesson.html</source>
        <translation>%1-lesson.html</translation>
    </message>
    <message>
        <source>Web pages (*.html)</source>
        <translation>网页 (*.html)</translation>
    </message>
    <message>
        <source>%1 is not in the model&apos;s vocabulary: the model reads it as %2, so the output says nothing about that word.</source>
        <translation>%1 不在模型的词表中：模型把它读作 %2，所以输出对这个词什么也说明不了。</translation>
    </message>
    <message>
        <source>%1 are not in the model&apos;s vocabulary: the model reads each as %2, so the output says nothing about those words.</source>
        <translation>%1 不在模型的词表中：模型把每个都读作 %2，所以输出对这些词什么也说明不了。</translation>
    </message>
    <message>
        <source>Open input &amp;text…</source>
        <translation>打开输入文本(&amp;T)…</translation>
    </message>
    <message>
        <source>Ctrl+Shift+T</source>
        <translation>Ctrl+Shift+T</translation>
    </message>
    <message>
        <source>A text to run the model on</source>
        <translation>要让模型运行的文本</translation>
    </message>
    <message>
        <source>Text files (*.txt *.md);;All files (*)</source>
        <translation>文本文件 (*.txt *.md);;所有文件 (*)</translation>
    </message>
    <message>
        <source>The input text was not read</source>
        <translation>没有读取输入文本</translation>
    </message>
    <message>
        <source>%1 is not UTF-8 text: save it as UTF-8 and open it again.</source>
        <translation>%1 不是 UTF-8 文本：请另存为 UTF-8 后再打开。</translation>
    </message>
    <message>
        <source>%1 holds no text.</source>
        <translation>%1 里没有文本。</translation>
    </message>
    <message>
        <source>Input text read</source>
        <translation>已读取输入文本</translation>
    </message>
    <message numerus="yes">
        <source>%n character(s) from %1 are in the input field: press Enter or Run to run them.</source>
        <translation><numerusform>%1 中的 %n 个字符已放入输入框：按回车或“运行”来运行。</numerusform></translation>
    </message>
</context>
<context>
    <name>attnviz::gui::MasksView</name>
    <message>
        <source>What am I looking at?</source>
        <translation>我在看什么？</translation>
    </message>
    <message>
        <source>Masks applied in the forward pass</source>
        <translation>前向传播中应用的掩码</translation>
    </message>
    <message>
        <source>Source padding</source>
        <translation>源填充</translation>
    </message>
    <message>
        <source>Target padding</source>
        <translation>目标填充</translation>
    </message>
    <message>
        <source>Look-ahead (subsequent, causal)</source>
        <translation>前瞻（后续、因果）掩码</translation>
    </message>
    <message>
        <source>Masks &lt;pad&gt; keys in encoder self-attention and cross-attention. Off: real tokens attend to padding too — watch the probabilities leak</source>
        <translation>在编码器自注意力和交叉注意力中掩盖 &lt;pad&gt; 键。关闭：真实词元也会关注填充 — 看概率如何泄漏</translation>
    </message>
    <message>
        <source>Masks &lt;pad&gt; keys in decoder self-attention</source>
        <translation>在解码器自注意力中掩盖 &lt;pad&gt; 键</translation>
    </message>
    <message>
        <source>Off: decoder queries see future target tokens — the future leaks into every later layer (teacher forcing makes this look deceptively good)</source>
        <translation>关闭：解码器的查询能看到未来的目标词元 — 未来信息泄漏到之后的每一层（教师强制会让结果看起来好得有欺骗性）</translation>
    </message>
    <message>
        <source>Switching a mask off reruns the model with the same tokens: the leak shows in every later layer and view.</source>
        <translation>关闭一个掩码会用相同的词元重新运行模型：泄漏会出现在之后的每一层和每个视图中。</translation>
    </message>
    <message>
        <source>Batch: sentences padded together</source>
        <translation>批次：一起填充的句子</translation>
    </message>
    <message>
        <source>Sentences of different lengths, padded to the longest: the padding mask at work</source>
        <translation>不同长度的句子填充到最长的长度：填充掩码在起作用</translation>
    </message>
    <message>
        <source>One sentence per line (two or more)</source>
        <translation>每行一个句子（两个或更多）</translation>
    </message>
    <message>
        <source>Run as a batch</source>
        <translation>作为一批运行</translation>
    </message>
    <message>
        <source>Decode every sentence greedily, then run them together as one padded batch; pick the sentence to show with “Sentence” above the views</source>
        <translation>贪心解码每个句子，然后把它们作为一个填充后的批次一起运行；用视图上方的“句子”选择要显示的句子</translation>
    </message>
    <message>
        <source>The masks (1 = masked, hatched)</source>
        <translation>掩码（1 = 被掩码，画斜线）</translation>
    </message>
    <message>
        <source>Scores → masked scores → softmax</source>
        <translation>分数 → 掩码后的分数 → softmax</translation>
    </message>
    <message>
        <source>Padding</source>
        <translation>填充</translation>
    </message>
    <message>
        <source>Showing a batch of %1 sentences padded to %2 source and %3 target tokens. Press Run above to go back to one sentence.</source>
        <translation>正在显示一批 %1 个句子，填充到 %2 个源词元和 %3 个目标词元。按上面的“运行”回到单个句子。</translation>
    </message>
    <message>
        <source>A single sentence has no padding. Run two or more sentences of different lengths to see the padding mask at work.</source>
        <translation>单个句子没有填充。运行两个或更多不同长度的句子，看看填充掩码如何起作用。</translation>
    </message>
    <message>
        <source>Press Run to see the masks</source>
        <translation>按“运行”查看掩码</translation>
    </message>
    <message>
        <source>The masks of the current input appear here after a run.</source>
        <translation>运行之后，当前输入的掩码会显示在这里。</translation>
    </message>
    <message>
        <source> — off</source>
        <translation> — 关</translation>
    </message>
    <message>
        <source>Padding mask</source>
        <translation>填充掩码</translation>
    </message>
    <message>
        <source>Target padding mask</source>
        <translation>目标填充掩码</translation>
    </message>
    <message>
        <source>Source padding mask</source>
        <translation>源填充掩码</translation>
    </message>
    <message>
        <source>Look-ahead mask (j &gt; i)</source>
        <translation>前瞻掩码 (j &gt; i)</translation>
    </message>
    <message>
        <source>No look-ahead mask in %1:
every query may see every key</source>
        <translation>%1中没有前瞻掩码：
每个查询都可以看到每个键</translation>
    </message>
    <message>
        <source>encoder self-attention</source>
        <translation>编码器自注意力</translation>
    </message>
    <message>
        <source>cross-attention</source>
        <translation>交叉注意力</translation>
    </message>
    <message>
        <source>Applied: the union of those on</source>
        <translation>已应用：开启的掩码的并集</translation>
    </message>
    <message>
        <source>QKᵀ/√d_k</source>
        <translation>QKᵀ/√d_k</translation>
    </message>
    <message>
        <source>QKᵀ</source>
        <translation>QKᵀ</translation>
    </message>
    <message>
        <source>QKᵀ·%1</source>
        <translation>QKᵀ·%1</translation>
    </message>
    <message>
        <source>%1·tanh(%2/%1)</source>
        <translation>%1·tanh(%2/%1)</translation>
    </message>
    <message>
        <source>1 · scores %1 + position bias</source>
        <translation>1 · 分数 %1 + 位置偏置</translation>
    </message>
    <message>
        <source>1 · scores %1</source>
        <translation>1 · 分数 %1</translation>
    </message>
    <message>
        <source>2 · masked (%1)</source>
        <translation>2 · 掩码后 (%1)</translation>
    </message>
    <message>
        <source>3 · softmax, row by row</source>
        <translation>3 · 逐行 softmax</translation>
    </message>
    <message>
        <source>%1%2</source>
        <translation>%1%2</translation>
    </message>
    <message>
        <source>  (the mean of the heads has no single pipeline: head 1 shown)</source>
        <translation>  （各头平均没有单一的计算流程：显示头 1）</translation>
    </message>
    <message>
        <source>&lt;b&gt;The look-ahead mask is off&lt;/b&gt;: decoder queries see future tokens, the cells above the diagonal are no longer 0.</source>
        <translation>&lt;b&gt;前瞻掩码已关闭&lt;/b&gt;：解码器的查询能看到未来的词元，对角线以上的格子不再是 0。</translation>
    </message>
    <message>
        <source>&lt;b&gt;The source padding mask is off&lt;/b&gt;: queries in encoder self-attention and cross-attention attend to the source&apos;s padding keys too.</source>
        <translation>&lt;b&gt;源填充掩码已关闭&lt;/b&gt;：编码器自注意力和交叉注意力中的查询也会关注源句的填充键。</translation>
    </message>
    <message>
        <source>&lt;b&gt;The padding mask is off&lt;/b&gt;: queries attend to padding keys too.</source>
        <translation>&lt;b&gt;填充掩码已关闭&lt;/b&gt;：查询也会关注填充键。</translation>
    </message>
    <message>
        <source>&lt;b&gt;The target padding mask is off&lt;/b&gt;: decoder queries attend to the target&apos;s padding keys too.</source>
        <translation>&lt;b&gt;目标填充掩码已关闭&lt;/b&gt;：解码器的查询也会关注目标的填充键。</translation>
    </message>
    <message>
        <source>One sentence has no padding, so nothing leaks yet: run a batch of sentences of different lengths to see it.</source>
        <translation>单个句子没有填充，所以还没有泄漏：运行一批不同长度的句子来看看。</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:0&apos;&gt;A mask marks the (query, key) pairs that must not attend: before the softmax their scores are replaced by %1, so their probabilities become exactly 0. &lt;b&gt;Padding mask&lt;/b&gt;: key &lt;i&gt;j&lt;/i&gt; is the pad token (id %2) — %3. &lt;b&gt;Look-ahead (subsequent) mask&lt;/b&gt;: key &lt;i&gt;j&lt;/i&gt; lies after query &lt;i&gt;i&lt;/i&gt; (%4, np.triu(ones, k=1)), used only in decoder self-attention. The decoder uses their union.&lt;/p&gt;&lt;p style=&apos;margin:4px 0 0 0&apos;&gt;Shapes: the mask is [batch, len_q, len_k] = %5 and is broadcast over the heads; scores and probabilities are [batch, heads, len_q, len_k] = %6. %7&lt;/p&gt;</source>
        <translation>&lt;p style='margin:0'&gt;掩码标出不允许关注的（查询，键）对：在 softmax 之前，它们的分数被替换为 %1，所以它们的概率恰好变为 0。&lt;b&gt;填充掩码&lt;/b&gt;：键 &lt;i&gt;j&lt;/i&gt; 是填充词元（id %2）— %3。&lt;b&gt;前瞻（后续）掩码&lt;/b&gt;：键 &lt;i&gt;j&lt;/i&gt; 位于查询 &lt;i&gt;i&lt;/i&gt; 之后（%4，np.triu(ones, k=1)），只用于解码器自注意力。解码器使用两者的并集。&lt;/p&gt;&lt;p style='margin:4px 0 0 0'&gt;形状：掩码是 [batch, len_q, len_k] = %5，在各头上广播；分数和概率是 [batch, heads, len_q, len_k] = %6。%7&lt;/p&gt;</translation>
    </message>
    <message>
        <source>none: this model has no padding token</source>
        <translation>无：此模型没有填充词元</translation>
    </message>
    <message>
        <source>M[b, i, j] = (key[b, j] == pad)</source>
        <translation>M[b, i, j] = (key[b, j] == pad)</translation>
    </message>
    <message>
        <source>j &amp;gt; i</source>
        <translation>j &amp;gt; i</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::MessageBar</name>
    <message>
        <source>Close this message</source>
        <translation>关闭此消息</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::OverviewGrid</name>
    <message>
        <source>Layer 88</source>
        <translation>第 88 层</translation>
    </message>
    <message>
        <source>Press Run to see every layer and head</source>
        <translation>按“运行”查看每一层和每个头</translation>
    </message>
    <message>
        <source>%1 — layers × heads (click one to open it)</source>
        <translation>%1 — 层 × 头（点击一个打开）</translation>
    </message>
    <message>
        <source>Mean</source>
        <translation>平均</translation>
    </message>
    <message>
        <source>Head %1</source>
        <translation>头 %1</translation>
    </message>
    <message>
        <source>Layer %1</source>
        <translation>第 %1 层</translation>
    </message>
    <message>
        <source>Layer %1, mean of the heads</source>
        <translation>第 %1 层，各头平均</translation>
    </message>
    <message>
        <source>Layer %1, head %2</source>
        <translation>第 %1 层，头 %2</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::OverviewView</name>
    <message>
        <source>What am I looking at?</source>
        <translation>我在看什么？</translation>
    </message>
    <message>
        <source>Every layer and head of one kind of attention appears here after a run.</source>
        <translation>运行之后，一种注意力的每一层和每个头会显示在这里。</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:0&apos;&gt;Each thumbnail is one head&apos;s [len_q, len_k] = %1 probability matrix (rows: queries, columns: keys, as in the Attention view), coloured from 0 to its own largest value so that every head&apos;s pattern shows. The full tensor is [batch, layers, heads, len_q, len_k] = %2. Heads of one layer run in parallel on different d_k = %3 slices of the projections, so they can learn different patterns: a diagonal, the previous token, a word&apos;s translation, or the end token.&lt;/p&gt;</source>
        <translation>&lt;p style='margin:0'&gt;每个缩略图是一个头的 [len_q, len_k] = %1 概率矩阵（行：查询，列：键，与“注意力”视图相同），颜色从 0 到它自己的最大值，让每个头的模式都能显现。完整的张量是 [batch, layers, heads, len_q, len_k] = %2。同一层的各头在投影的不同 d_k = %3 切片上并行运行，所以它们能学到不同的模式：对角线、前一个词元、一个词的译文，或者结束词元。&lt;/p&gt;</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::PositionalView</name>
    <message>
        <source>What am I looking at?</source>
        <translation>我在看什么？</translation>
    </message>
    <message>
        <source>Table:</source>
        <translation>表：</translation>
    </message>
    <message>
        <source>Positions:</source>
        <translation>位置：</translation>
    </message>
    <message>
        <source>How many positions (rows of the table) to show</source>
        <translation>显示多少个位置（表的行数）</translation>
    </message>
    <message>
        <source>Curves of dimensions:</source>
        <translation>维度曲线：</translation>
    </message>
    <message>
        <source>Comma-separated dimension indices (0 … d_model − 1); even ones are sines, odd ones cosines</source>
        <translation>逗号分隔的维度索引（0 … d_model − 1）；偶数维是正弦，奇数维是余弦</translation>
    </message>
    <message>
        <source>Encoder (learned)</source>
        <translation>编码器（可学习）</translation>
    </message>
    <message>
        <source>Decoder (learned)</source>
        <translation>解码器（可学习）</translation>
    </message>
    <message>
        <source>Rotary (every head&apos;s queries and keys)</source>
        <translation>旋转（每个头的查询和键）</translation>
    </message>
    <message>
        <source>Decoder relative bias, head %1</source>
        <translation>解码器相对偏置，头 %1</translation>
    </message>
    <message>
        <source>Encoder relative bias, head %1</source>
        <translation>编码器相对偏置，头 %1</translation>
    </message>
    <message>
        <source>Sinusoidal (encoder and decoder)</source>
        <translation>正弦（编码器和解码器）</translation>
    </message>
    <message>
        <source>No model loaded</source>
        <translation>没有加载模型</translation>
    </message>
    <message>
        <source>Positional encodings appear here once a model is loaded.</source>
        <translation>加载模型后，位置编码会显示在这里。</translation>
    </message>
    <message>
        <source>x = embedding·√d_model + PE (this model scales its embeddings by √%1 = %2)</source>
        <translation>x = 嵌入·√d_model + PE（此模型把嵌入乘以 √%1 = %2）</translation>
    </message>
    <message>
        <source>x = embedding + PE</source>
        <translation>x = 嵌入 + PE</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:0&apos;&gt;This model &lt;b&gt;learns&lt;/b&gt; its positions: row &lt;i&gt;pos&lt;/i&gt; of the weight table [max_len, d_model] = %1 is added to the embedding of the token at position &lt;i&gt;pos&lt;/i&gt;: %2. The curves show chosen columns, the matrix the first %3 rows, and the right-hand matrix the cosine similarity of every pair of rows — trained positions often end up similar to their neighbours.&lt;/p&gt;</source>
        <translation>&lt;p style='margin:0'&gt;这个模型&lt;b&gt;学习&lt;/b&gt;它的位置：权重表 [max_len, d_model] = %1 的第 &lt;i&gt;pos&lt;/i&gt; 行加到位置 &lt;i&gt;pos&lt;/i&gt; 上词元的嵌入上：%2。曲线显示所选的列，矩阵显示前 %3 行，右边的矩阵显示每两行之间的余弦相似度 — 训练后的位置往往与相邻位置相似。&lt;/p&gt;</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:0&apos;&gt;%1, %2, i = 0 … d_model/2 − 1. Each pair of dimensions is a sine and a cosine of one frequency: low dimensions turn fast, high ones slowly, so every position gets a unique pattern, and PE(pos + k) is a rotation of PE(pos). It is added to the token embeddings: %3.&lt;/p&gt;&lt;p style=&apos;margin:4px 0 0 0&apos;&gt;Shapes: the table is [max_len, d_model] = %4 (shown: the first %5 positions); the similarity matrix PE·PEᵀ (rows normalised) is [positions, positions] = %6 and depends only on the distance |p − q|.&lt;/p&gt;</source>
        <translation>&lt;p style='margin:0'&gt;%1，%2，i = 0 … d_model/2 − 1。每对维度是同一频率的一个正弦和一个余弦：低维转得快，高维转得慢，所以每个位置都有独一无二的模式，而且 PE(pos + k) 是 PE(pos) 的一个旋转。它被加到词元嵌入上：%3。&lt;/p&gt;&lt;p style='margin:4px 0 0 0'&gt;形状：表是 [max_len, d_model] = %4（显示前 %5 个位置）；相似度矩阵 PE·PEᵀ（行已归一化）是 [positions, positions] = %6，只取决于距离 |p − q|。&lt;/p&gt;</translation>
    </message>
    <message>
        <source>PE(pos, 2i) = sin(pos / 10000&lt;sup&gt;2i/d_model&lt;/sup&gt;)</source>
        <translation>PE(pos, 2i) = sin(pos / 10000&lt;sup&gt;2i/d_model&lt;/sup&gt;)</translation>
    </message>
    <message>
        <source>PE(pos, 2i+1) = cos(pos / 10000&lt;sup&gt;2i/d_model&lt;/sup&gt;)</source>
        <translation>PE(pos, 2i+1) = cos(pos / 10000&lt;sup&gt;2i/d_model&lt;/sup&gt;)</translation>
    </message>
    <message>
        <source>dim %1</source>
        <translation>维度 %1</translation>
    </message>
    <message>
        <source>dim %1: %2, i = %3</source>
        <translation>维度 %1：%2，i = %3</translation>
    </message>
    <message>
        <source>position</source>
        <translation>位置</translation>
    </message>
    <message>
        <source>PE</source>
        <translation>PE</translation>
    </message>
    <message>
        <source>Learned positions (%1 table): chosen dimensions</source>
        <translation>可学习的位置（%1 表）：所选维度</translation>
    </message>
    <message>
        <source>Sinusoidal positional encoding: chosen dimensions</source>
        <translation>正弦位置编码：所选维度</translation>
    </message>
    <message>
        <source>position ↓</source>
        <translation>位置 ↓</translation>
    </message>
    <message>
        <source>dimension → (0 … %1)</source>
        <translation>维度 → (0 … %1)</translation>
    </message>
    <message>
        <source>dimension</source>
        <translation>维度</translation>
    </message>
    <message>
        <source>PE value</source>
        <translation>PE 值</translation>
    </message>
    <message>
        <source>PE matrix [positions, d_model] = %1</source>
        <translation>PE 矩阵 [positions, d_model] = %1</translation>
    </message>
    <message>
        <source>position p ↓</source>
        <translation>位置 p ↓</translation>
    </message>
    <message>
        <source>position q →</source>
        <translation>位置 q →</translation>
    </message>
    <message>
        <source>cosine</source>
        <translation>余弦</translation>
    </message>
    <message>
        <source>Position similarity cos(PE_p, PE_q)</source>
        <translation>位置相似度 cos(PE_p, PE_q)</translation>
    </message>
    <message>
        <source>d_model = %1 · %2 · max_len = %3</source>
        <translation>d_model = %1 · %2 · max_len = %3</translation>
    </message>
    <message>
        <source>learned</source>
        <translation>可学习</translation>
    </message>
    <message>
        <source>sinusoidal</source>
        <translation>正弦</translation>
    </message>
    <message>
        <source>Hugging Face&apos;s rotate_half layout</source>
        <translation>Hugging Face 的 rotate_half 布局</translation>
    </message>
    <message>
        <source>llama2.c&apos;s and Meta&apos;s interleaved layout</source>
        <translation>llama2.c 和 Meta 的交错布局</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:0&apos;&gt;&lt;b&gt;Rotary position embeddings (RoPE)&lt;/b&gt; add nothing to the token vectors. Inside every self-attention layer each head&apos;s query and key — not its value — are &lt;b&gt;rotated&lt;/b&gt; by an angle that grows with their position: the d_head = %1 numbers form %2 pairs, dimensions %3 (%4), and at position &lt;i&gt;pos&lt;/i&gt; pair &lt;i&gt;i&lt;/i&gt; turns by pos·θ&lt;sub&gt;i&lt;/sub&gt;, %5. Upper chart: pair 0 turns %6 radian per position (a full turn every %7 positions), the last pair %8 (a turn every %9 positions).&lt;/p&gt;&lt;p style=&apos;margin:4px 0 0 0&apos;&gt;&lt;b&gt;Why only the offset counts.&lt;/b&gt; Turning q by mθ and k by nθ changes the angle between them by (m − n)θ alone: ⟨R(m)q, R(n)k⟩ = ⟨q, R(n − m)k⟩. A query at position 10 and a key at 7 score as a query at 3 and a key at 0. The heatmap puts the same vector q = k = (1, …, 1) at every position, turns it with the model&apos;s own rotation and compares: it is the same along every diagonal. The lower chart is that score against the offset m − n: 1 at 0, then falling and wavering as the pairs drift out of step.&lt;/p&gt;&lt;p style=&apos;margin:4px 0 0 0&apos;&gt;&lt;b&gt;rope_theta = %10&lt;/b&gt; sets how slowly the last pairs turn: a larger value (Llama 2: 10000, Llama 3: 500000) keeps far-apart positions distinguishable over longer texts. Shapes: the forward pass&apos;s rotation table holds cos and sin, [2, positions, d_head/2] = %11; Q [batch, heads, len, d_head] and K [batch, key/value heads, len, d_head] = %12 are turned head by head.&lt;/p&gt;</source>
        <translation>&lt;p style='margin:0'&gt;&lt;b&gt;旋转位置编码（RoPE）&lt;/b&gt;不往词元向量上加任何东西。在每个自注意力层内部，每个头的查询和键 — 而不是值 — 按随位置增长的角度&lt;b&gt;旋转&lt;/b&gt;：d_head = %1 个数组成 %2 对，维度 %3（%4），在位置 &lt;i&gt;pos&lt;/i&gt; 上第 &lt;i&gt;i&lt;/i&gt; 对转过 pos·θ&lt;sub&gt;i&lt;/sub&gt;，%5。上图：第 0 对每个位置转 %6 弧度（每 %7 个位置转一整圈），最后一对转 %8（每 %9 个位置转一圈）。&lt;/p&gt;&lt;p style='margin:4px 0 0 0'&gt;&lt;b&gt;为什么只有偏移起作用。&lt;/b&gt;把 q 转 mθ、把 k 转 nθ，它们之间的角度只改变 (m − n)θ：⟨R(m)q, R(n)k⟩ = ⟨q, R(n − m)k⟩。位置 10 的查询与位置 7 的键，得分与位置 3 的查询和位置 0 的键相同。热力图在每个位置放同一个向量 q = k = (1, …, 1)，用模型自己的旋转转动它并比较：沿每条对角线都相同。下图是这个分数随偏移 m − n 的变化：在 0 处为 1，然后随着各对逐渐错开而下降、起伏。&lt;/p&gt;&lt;p style='margin:4px 0 0 0'&gt;&lt;b&gt;rope_theta = %10&lt;/b&gt; 决定最后几对转得多慢：更大的值（Llama 2：10000，Llama 3：500000）让相距很远的位置在更长的文本中仍可区分。形状：前向传播的旋转表保存 cos 和 sin，[2, positions, d_head/2] = %11；Q [batch, heads, len, d_head] 和 K [batch, key/value heads, len, d_head] = %12 逐头旋转。&lt;/p&gt;</translation>
    </message>
    <message>
        <source>%1 (only the first %2 rotate, rotary_pct %3; the rest pass unturned)</source>
        <translation>%1（只有前 %2 个旋转，rotary_pct %3；其余不旋转）</translation>
    </message>
    <message>
        <source>θ&lt;sub&gt;i&lt;/sub&gt; = rope_theta&lt;sup&gt;−2i/d_head&lt;/sup&gt; = %1&lt;sup&gt;−2i/%2&lt;/sup&gt;</source>
        <translation>θ&lt;sub&gt;i&lt;/sub&gt; = rope_theta&lt;sup&gt;−2i/d_head&lt;/sup&gt; = %1&lt;sup&gt;−2i/%2&lt;/sup&gt;</translation>
    </message>
    <message>
        <source>offset j − i (key position − query position)</source>
        <translation>偏移 j − i（键的位置 − 查询的位置）</translation>
    </message>
    <message>
        <source>bias</source>
        <translation>偏置</translation>
    </message>
    <message>
        <source>%1 head %2: the bias added to a score, by offset</source>
        <translation>%1头 %2：按偏移加到分数上的偏置</translation>
    </message>
    <message>
        <source>Decoder</source>
        <translation>解码器</translation>
    </message>
    <message>
        <source>Encoder</source>
        <translation>编码器</translation>
    </message>
    <message>
        <source>query position i ↓</source>
        <translation>查询的位置 i ↓</translation>
    </message>
    <message>
        <source>key position j →</source>
        <translation>键的位置 j →</translation>
    </message>
    <message>
        <source>query position</source>
        <translation>查询的位置</translation>
    </message>
    <message>
        <source>key position</source>
        <translation>键的位置</translation>
    </message>
    <message>
        <source>bias[i, j] = table[bucket(j − i), head %1]</source>
        <translation>bias[i, j] = table[bucket(j − i), head %1]</translation>
    </message>
    <message>
        <source>relative position bias · %1 buckets · max_distance %2 · %3 heads</source>
        <translation>相对位置偏置 · %1 个桶 · max_distance %2 · %3 个头</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:0&apos;&gt;&lt;b&gt;Relative position bias (T5)&lt;/b&gt; adds nothing to the token vectors. Each head learns one number per &lt;b&gt;bucket&lt;/b&gt; of the offset j − i between a key and a query, and adds it to their score before the mask and the softmax: score = q·k + bias[bucket(j − i)] (T5 does not divide by √d_k). Offsets below %1 each have a bucket of their own; larger ones share buckets on a logarithmic scale up to %2, beyond which they all read the last one. %3&lt;/p&gt;&lt;p style=&apos;margin:4px 0 0 0&apos;&gt;The table [buckets, heads] = %4 is held by the first layer of each stack and used by every layer of it; cross-attention has none. The heatmap is this head&apos;s bias for every query and key position; the chart reads it along one row, by offset.&lt;/p&gt;</source>
        <translation>&lt;p style='margin:0'&gt;&lt;b&gt;相对位置偏置（T5）&lt;/b&gt;不往词元向量上加任何东西。每个头为键与查询之间偏移 j − i 的每个&lt;b&gt;桶&lt;/b&gt;学习一个数，并在掩码和 softmax 之前把它加到分数上：score = q·k + bias[bucket(j − i)]（T5 不除以 √d_k）。小于 %1 的偏移各有自己的桶；更大的偏移按对数刻度共享桶，直到 %2，超过后都读取最后一个桶。%3&lt;/p&gt;&lt;p style='margin:4px 0 0 0'&gt;表 [buckets, heads] = %4 由每个栈的第一层持有，并被该栈的每一层使用；交叉注意力没有。热力图是这个头在每个查询和键位置上的偏置；图表按偏移读取其中一行。&lt;/p&gt;</translation>
    </message>
    <message>
        <source>In the decoder the buckets are causal: every key after the query reads bucket 0 (and is masked anyway).</source>
        <translation>在解码器中，桶是因果的：查询之后的每个键都读取桶 0（反正也被掩码了）。</translation>
    </message>
    <message>
        <source>In the encoder half the buckets are for keys after the query, half for keys before it.</source>
        <translation>在编码器中，一半的桶给查询之后的键，一半给查询之前的键。</translation>
    </message>
    <message>
        <source>θ_i</source>
        <translation>θ_i</translation>
    </message>
    <message>
        <source>pair i: dimensions %1</source>
        <translation>第 i 对：维度 %1</translation>
    </message>
    <message>
        <source>How fast each pair of dimensions turns: θ_i radians per position</source>
        <translation>每对维度转得多快：每个位置 θ_i 弧度</translation>
    </message>
    <message>
        <source>score / |q|²</source>
        <translation>分数 / |q|²</translation>
    </message>
    <message>
        <source>offset m − n (query position − key position)</source>
        <translation>偏移 m − n（查询的位置 − 键的位置）</translation>
    </message>
    <message>
        <source>The score of the same q and k, m − n positions apart</source>
        <translation>相同的 q 和 k 相距 m − n 个位置时的分数</translation>
    </message>
    <message>
        <source>query position m ↓</source>
        <translation>查询的位置 m ↓</translation>
    </message>
    <message>
        <source>key position n →</source>
        <translation>键的位置 n →</translation>
    </message>
    <message>
        <source>⟨R(m)q, R(n)k⟩ / |q|², q = k = (1, …, 1)</source>
        <translation>⟨R(m)q, R(n)k⟩ / |q|², q = k = (1, …, 1)</translation>
    </message>
    <message>
        <source>d_head = %1 · rotary, rope_theta = %2 · max_len = %3</source>
        <translation>d_head = %1 · 旋转，rope_theta = %2 · max_len = %3</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::SearchView</name>
    <message>
        <source>What am I looking at?</source>
        <translation>我在看什么？</translation>
    </message>
    <message>
        <source>Greedy (beam width 1)</source>
        <translation>贪心（束宽 1）</translation>
    </message>
    <message>
        <source>Sampling</source>
        <translation>采样</translation>
    </message>
    <message>
        <source>Beam search</source>
        <translation>束搜索</translation>
    </message>
    <message>
        <source>Method:</source>
        <translation>方法：</translation>
    </message>
    <message>
        <source>Max new tokens:</source>
        <translation>最多新词元：</translation>
    </message>
    <message>
        <source>default: the decoding length setting (else the source length + 5)</source>
        <translation>默认：解码长度设置（否则为源句长度 + 5）</translation>
    </message>
    <message>
        <source>default</source>
        <translation>默认</translation>
    </message>
    <message>
        <source>Search</source>
        <translation>搜索</translation>
    </message>
    <message>
        <source>Show the chosen hypothesis in every view</source>
        <translation>在每个视图中显示所选的假设</translation>
    </message>
    <message>
        <source>Loads the selected beam (or sample) as the current decode (double-click a node does the same)</source>
        <translation>把所选的束（或样本）作为当前解码加载（双击节点效果相同）</translation>
    </message>
    <message>
        <source>Sampling:</source>
        <translation>采样：</translation>
    </message>
    <message>
        <source>softmax(logits / T): T &lt; 1 sharpens, T &gt; 1 flattens</source>
        <translation>softmax(logits / T)：T &lt; 1 更尖锐，T &gt; 1 更平缓</translation>
    </message>
    <message>
        <source>Keep only the k most probable tokens (0 = all)</source>
        <translation>只保留概率最高的 k 个词元（0 = 全部）</translation>
    </message>
    <message>
        <source>all</source>
        <translation>全部</translation>
    </message>
    <message>
        <source>Then keep the fewest most probable tokens whose probabilities add up to p (1 = all)</source>
        <translation>然后保留概率之和达到 p 的最少的高概率词元（1 = 全部）</translation>
    </message>
    <message>
        <source>The same seed draws the same sentence</source>
        <translation>相同的种子抽出相同的句子</translation>
    </message>
    <message>
        <source>How many samples, with seeds seed, seed + 1, …</source>
        <translation>样本数，种子依次为 seed、seed + 1、…</translation>
    </message>
    <message>
        <source>temperature</source>
        <translation>温度</translation>
    </message>
    <message>
        <source>top-k</source>
        <translation>top-k</translation>
    </message>
    <message>
        <source>top-p</source>
        <translation>top-p</translation>
    </message>
    <message>
        <source>seed</source>
        <translation>种子</translation>
    </message>
    <message>
        <source>samples</source>
        <translation>样本</translation>
    </message>
    <message>
        <source>Beam:</source>
        <translation>束宽：</translation>
    </message>
    <message>
        <source>How many hypotheses are kept at each step</source>
        <translation>每一步保留多少个假设</translation>
    </message>
    <message>
        <source>Finished hypotheses are ranked by score / length^α; 0 = the plain sum of log-probabilities</source>
        <translation>已完成的假设按 分数 / 长度^α 排序；0 = 对数概率的简单求和</translation>
    </message>
    <message>
        <source>How many of the best candidates that were not kept to draw, greyed</source>
        <translation>画出多少个未被保留的最佳候选（灰色）</translation>
    </message>
    <message>
        <source>width</source>
        <translation>宽度</translation>
    </message>
    <message>
        <source>length penalty α</source>
        <translation>长度惩罚 α</translation>
    </message>
    <message>
        <source>pruned shown</source>
        <translation>显示已剪枝</translation>
    </message>
    <message>
        <source>sampled sentence</source>
        <translation>采样得到的句子</translation>
    </message>
    <message>
        <source>log P (model)</source>
        <translation>log P（模型）</translation>
    </message>
    <message>
        <source>each token: p drawn from / p model</source>
        <translation>每个词元：采样用的 p / 模型的 p</translation>
    </message>
    <message>
        <source>This model has no decoder: there is nothing to decode.</source>
        <translation>此模型没有解码器：没有可解码的内容。</translation>
    </message>
    <message>
        <source>Searching…</source>
        <translation>搜索中…</translation>
    </message>
    <message>
        <source>Searching</source>
        <translation>搜索中</translation>
    </message>
    <message>
        <source>&lt;b&gt;Chosen:&lt;/b&gt; %1 — score %2%3&lt;br&gt;&lt;b&gt;Finished hypotheses, best first:&lt;/b&gt; %4</source>
        <translation>&lt;b&gt;已选：&lt;/b&gt;%1 — 分数 %2%3&lt;br&gt;&lt;b&gt;已完成的假设，最优在前：&lt;/b&gt;%4</translation>
    </message>
    <message>
        <source>, rank %1</source>
        <translation>，排名 %1</translation>
    </message>
    <message>
        <source>&lt;b&gt;Sample %1:&lt;/b&gt; %2 — log P = %3 under the model</source>
        <translation>&lt;b&gt;样本 %1：&lt;/b&gt;%2 — 模型下 log P = %3</translation>
    </message>
    <message>
        <source>Press Search: it starts from the current source and target prefix.</source>
        <translation>按“搜索”：它从当前的源句和目标前缀开始。</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:0&apos;&gt;Greedy decoding takes the most probable token at every step. &lt;b&gt;Sampling&lt;/b&gt; draws it instead from softmax(logits / temperature), after keeping only the top-k tokens and then the fewest tokens whose probabilities reach top-p; a seed makes the draws repeatable. &lt;b&gt;Beam search&lt;/b&gt; keeps the &lt;i&gt;width&lt;/i&gt; best partial sentences by their score, the sum of the log-probabilities of their tokens (natural log; 0 is certain, more negative is less likely): at every step each kept hypothesis proposes every token, and the best candidates stay; a hypothesis that chooses the end token (or reaches the length limit) is finished and frees its slot. Finished ones are ranked by score / length^α (α = 0: the plain score).&lt;/p&gt;&lt;p style=&apos;margin:4px 0 0 0&apos;&gt;In the tree each column is a step: green boxes finished, dashed ones were cut at the length limit, grey ones were pruned; the orange path is the best hypothesis. Click a box to choose it, double-click (or the button) to load it into every view.&lt;/p&gt;</source>
        <translation>&lt;p style='margin:0'&gt;贪心解码每一步取概率最高的词元。&lt;b&gt;采样&lt;/b&gt;则从 softmax(logits / temperature) 中抽取，先只保留 top-k 个词元，再保留概率之和达到 top-p 的最少词元；种子让抽取可重复。&lt;b&gt;束搜索&lt;/b&gt;按分数保留 &lt;i&gt;width&lt;/i&gt; 个最好的部分句子，分数是它们词元对数概率之和（自然对数；0 表示确定，越负越不可能）：每一步每个保留的假设提出每个词元，最好的候选留下；选择了结束词元（或达到长度上限）的假设完成并腾出位置。完成的假设按 分数 / 长度^α 排序（α = 0：原始分数）。&lt;/p&gt;&lt;p style='margin:4px 0 0 0'&gt;在树中每一列是一步：绿色框已完成，虚线框在长度上限处被截断，灰色框被剪枝；橙色路径是最好的假设。点击一个框选择它，双击（或按按钮）把它加载到每个视图。&lt;/p&gt;</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::StructureModel</name>
    <message>
        <source>Mean of heads</source>
        <translation>各头平均</translation>
    </message>
    <message>
        <source>The average of the %1 heads&apos; attention</source>
        <translation>%1 个头注意力的平均</translation>
    </message>
    <message>
        <source>Head %1</source>
        <translation>头 %1</translation>
    </message>
    <message>
        <source>Head %1: its own W_Q, W_K, W_V slices of width d_k = %2</source>
        <translation>头 %1：它自己的 W_Q、W_K、W_V 切片，宽度 d_k = %2</translation>
    </message>
    <message>
        <source>Head %1: its own W_Q slice of width d_k = %2; %3</source>
        <translation>头 %1：它自己的 W_Q 切片，宽度 d_k = %2；%3</translation>
    </message>
    <message>
        <source>learned</source>
        <translation>可学习</translation>
    </message>
    <message>
        <source>sinusoidal</source>
        <translation>正弦</translation>
    </message>
    <message>
        <source>Embedding (rotary positions)</source>
        <translation>嵌入（旋转位置）</translation>
    </message>
    <message>
        <source>Embedding + positions</source>
        <translation>嵌入 + 位置</translation>
    </message>
    <message>
        <source>Token embedding [%1 %2, d_model %3]%4%5%6</source>
        <translation>词元嵌入 [%1 %2, d_model %3]%4%5%6</translation>
    </message>
    <message>
        <source> plus the %1 positional encoding</source>
        <translation>加上%1位置编码</translation>
    </message>
    <message>
        <source> and %1 segment embeddings</source>
        <translation>以及 %1 个片段嵌入</translation>
    </message>
    <message>
        <source>, then a LayerNorm</source>
        <translation>，然后是层归一化</translation>
    </message>
    <message>
        <source>; rotary positions turn the queries and keys inside attention instead</source>
        <translation>；旋转位置编码则在注意力内部旋转查询和键</translation>
    </message>
    <message>
        <source>Position-wise: the same two linear layers for every token</source>
        <translation>逐位置：每个词元使用相同的两个线性层</translation>
    </message>
    <message>
        <source>Encoder (1 layer)</source>
        <translation>编码器（1 层）</translation>
    </message>
    <message>
        <source>Encoder (%1 layers)</source>
        <translation>编码器（%1 层）</translation>
    </message>
    <message>
        <source>Reads the input; every layer is self-attention + feed-forward</source>
        <translation>读取输入；每一层是自注意力 + 前馈网络</translation>
    </message>
    <message>
        <source>Layer %1</source>
        <translation>第 %1 层</translation>
    </message>
    <message>
        <source>Self-attention</source>
        <translation>自注意力</translation>
    </message>
    <message>
        <source>Every input token attends to every input token (padding masked)</source>
        <translation>每个输入词元关注每个输入词元（填充被掩码）</translation>
    </message>
    <message>
        <source>Feed-forward (d_ff %1)</source>
        <translation>前馈网络 (d_ff %1)</translation>
    </message>
    <message>
        <source>Masked-LM head → softmax</source>
        <translation>掩码语言模型头 → softmax</translation>
    </message>
    <message>
        <source>Classifier → softmax</source>
        <translation>分类器 → softmax</translation>
    </message>
    <message>
        <source>Output: hidden states</source>
        <translation>输出：隐藏状态</translation>
    </message>
    <message>
        <source>The mean over positions, then Linear [classes %1, d_model %2]</source>
        <translation>对位置取平均，然后是线性层 [classes %1, d_model %2]</translation>
    </message>
    <message>
        <source>What the model predicts (the Decoding view shows it)</source>
        <translation>模型预测的内容（“解码”视图会显示）</translation>
    </message>
    <message>
        <source>Decoder (1 layer)</source>
        <translation>解码器（1 层）</translation>
    </message>
    <message>
        <source>Decoder (%1 layers)</source>
        <translation>解码器（%1 层）</translation>
    </message>
    <message>
        <source>Writes the target one token at a time</source>
        <translation>一次写出一个目标词元</translation>
    </message>
    <message>
        <source>Masked self-attention</source>
        <translation>掩码自注意力</translation>
    </message>
    <message>
        <source>Target tokens attend to themselves and earlier target tokens only</source>
        <translation>目标词元只关注自身和更早的目标词元</translation>
    </message>
    <message>
        <source>Cross-attention</source>
        <translation>交叉注意力</translation>
    </message>
    <message>
        <source>Target tokens (queries) attend to the encoder output (keys and values)</source>
        <translation>目标词元（查询）关注编码器的输出（键和值）</translation>
    </message>
    <message>
        <source>Output projection → softmax</source>
        <translation>输出投影 → softmax</translation>
    </message>
    <message>
        <source>Linear [tgt_vocab %1, d_model %2]: the next-token probabilities (Decoding view)</source>
        <translation>线性层 [tgt_vocab %1, d_model %2]：下一个词元的概率（“解码”视图）</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::TopKModel</name>
    <message>
        <source>“%1”: p = %2 at this position</source>
        <translation>“%1”：此位置 p = %2</translation>
    </message>
    <message>
        <source>Double-click (or press Enter) to continue the decode with “%1”</source>
        <translation>双击（或按 Enter）用“%1”继续解码</translation>
    </message>
    <message>
        <source>Rank</source>
        <translation>排名</translation>
    </message>
    <message>
        <source>Token</source>
        <translation>词元</translation>
    </message>
    <message>
        <source>Probability</source>
        <translation>概率</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::Tour</name>
    <message>
        <source>This step could not be set up: %1 — %2</source>
        <translation>无法设置这一步：%1 — %2</translation>
    </message>
    <message>
        <source>New to attnviz?</source>
        <translation>初次使用 attnviz？</translation>
    </message>
    <message>
        <source>A tour of %1 short steps shows what to look for: what a row and a column of a heatmap are, alignments, heads, masks and decoding, each on a bundled model. It takes a few minutes; Help › Tour brings it back at any time.</source>
        <translation>一个由 %1 个简短步骤组成的导览会告诉你该看什么：热力图的行和列是什么、对齐、注意力头、掩码和解码，每一步都用一个内置模型演示。只需几分钟；随时可以通过“帮助 › 导览”再次打开。</translation>
    </message>
    <message>
        <source>Take the tour</source>
        <translation>开始导览</translation>
    </message>
    <message>
        <source>Not now</source>
        <translation>以后再说</translation>
    </message>
    <message>
        <source>End tour</source>
        <translation>结束导览</translation>
    </message>
    <message>
        <source>Step %1 of %2</source>
        <translation>第 %1 步，共 %2 步</translation>
    </message>
    <message>
        <source>Finish</source>
        <translation>完成</translation>
    </message>
    <message>
        <source>Next ▶</source>
        <translation>下一步 ▶</translation>
    </message>
    <message>
        <source>Setting up…</source>
        <translation>正在设置…</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::TourPanel</name>
    <message>
        <source>Close the tour</source>
        <translation>关闭导览</translation>
    </message>
    <message>
        <source>◀ Back</source>
        <translation>◀ 上一步</translation>
    </message>
    <message>
        <source>Next ▶</source>
        <translation>下一步 ▶</translation>
    </message>
    <message>
        <source>End tour</source>
        <translation>结束导览</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::TrainView</name>
    <message>
        <source>What happens when a Transformer trains?</source>
        <translation>Transformer 训练时发生了什么？</translation>
    </message>
    <message>
        <source>Task:</source>
        <translation>任务：</translation>
    </message>
    <message>
        <source>Copy a sequence</source>
        <translation>复制一个序列</translation>
    </message>
    <message>
        <source>Reverse a sequence</source>
        <translation>反转一个序列</translation>
    </message>
    <message>
        <source>Sort a sequence</source>
        <translation>排序一个序列</translation>
    </message>
    <message>
        <source>Reorder language (bundled)</source>
        <translation>调序语言（内置）</translation>
    </message>
    <message>
        <source>My sentences (file)…</source>
        <translation>我的句子（文件）…</translation>
    </message>
    <message>
        <source>Induction (repeats)</source>
        <translation>归纳（重复）</translation>
    </message>
    <message>
        <source>What the model learns: copy, reverse or sort 3–12 digits and letters; translate the bundled reorder model&apos;s made-up language; or your own sentence pairs, one &quot;source&lt;TAB&gt;target&quot; pair a line; or continue a sequence seen earlier (Induction: the recipe in which an induction head forms, docs/training.md)</source>
        <translation>模型学什么：复制、反转或排序 3–12 个数字和字母；翻译内置 reorder 模型的人造语言；或者你自己的句对，每行一个 "源&lt;TAB&gt;目标"；或者续写之前见过的序列（Induction：会形成归纳头的配方，见 docs/training.md）</translation>
    </message>
    <message>
        <source>Sentences file…</source>
        <translation>句子文件…</translation>
    </message>
    <message>
        <source>A UTF-8 text file with one &quot;source&lt;TAB&gt;target&quot; pair a line</source>
        <translation>UTF-8 文本文件，每行一个 "源&lt;TAB&gt;目标" 句对</translation>
    </message>
    <message>
        <source>Size:</source>
        <translation>大小：</translation>
    </message>
    <message>
        <source>The model&apos;s size; &quot;tutorial&quot; is the tutorials&apos; full size and trains slowly on a CPU</source>
        <translation>模型的大小；"tutorial" 是教程中的完整大小，在 CPU 上训练较慢</translation>
    </message>
    <message>
        <source>Steps:</source>
        <translation>步数：</translation>
    </message>
    <message>
        <source>Optimizer steps, each on a fresh batch of 64 sentence pairs</source>
        <translation>优化器步数，每步使用新的一批 64 个句对</translation>
    </message>
    <message>
        <source>Seed:</source>
        <translation>种子：</translation>
    </message>
    <message>
        <source>The same seed trains the same model again, step for step</source>
        <translation>相同的种子会一步一步地训练出相同的模型</translation>
    </message>
    <message>
        <source>Keep:</source>
        <translation>保留：</translation>
    </message>
    <message>
        <source>every </source>
        <translation>每 </translation>
    </message>
    <message>
        <source> steps</source>
        <translation> 步</translation>
    </message>
    <message>
        <source>off</source>
        <translation>关</translation>
    </message>
    <message>
        <source>Keep checkpoints: the model every N steps (and before the first and after the last) in a folder beside the saved model, NAME-checkpoints, with an index of steps and losses: attnviz-cli history FOLDER shows how each head changed over the run</source>
        <translation>保留检查点：每 N 步（以及第一步之前和最后一步之后）把模型保存到已保存模型旁边的文件夹 NAME-checkpoints 中，并带有步数和损失的索引：attnviz-cli history FOLDER 显示每个头在训练中如何变化</translation>
    </message>
    <message>
        <source>Start</source>
        <translation>开始</translation>
    </message>
    <message>
        <source>Pause</source>
        <translation>暂停</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <source>Open in attnviz</source>
        <translation>在 attnviz 中打开</translation>
    </message>
    <message>
        <source>Load the trained model in the other views: Attention, Overview, Masks, Positional encoding, Decoding</source>
        <translation>在其他视图中加载训练好的模型：注意力、总览、掩码、位置编码、解码</translation>
    </message>
    <message>
        <source>Save as…</source>
        <translation>另存为…</translation>
    </message>
    <message>
        <source>Snapshot:</source>
        <translation>快照：</translation>
    </message>
    <message>
        <source>Scrub through the recorded snapshots of every head&apos;s attention</source>
        <translation>浏览记录下的每个头注意力的快照</translation>
    </message>
    <message>
        <source>step 888888 of 888888 · loss 8.888</source>
        <translation>第 888888 步，共 888888 步 · 损失 8.888</translation>
    </message>
    <message>
        <source>Sentence pairs</source>
        <translation>句对</translation>
    </message>
    <message>
        <source>Text (*.txt *.tsv);;All files (*)</source>
        <translation>文本 (*.txt *.tsv);;所有文件 (*)</translation>
    </message>
    <message>
        <source>My sentences: %1</source>
        <translation>我的句子：%1</translation>
    </message>
    <message>
        <source>Resume</source>
        <translation>继续</translation>
    </message>
    <message>
        <source>&lt;p&gt;Training repeats one step: a batch of 64 fresh sentence pairs goes through the model (teacher-forced: the decoder reads %1 + the target), the &lt;b&gt;cross-entropy&lt;/b&gt; of its next-token predictions is the loss, the &lt;b&gt;backward pass&lt;/b&gt; gives every weight its gradient (each op of the forward pass has its backward beside it), and &lt;b&gt;Adam&lt;/b&gt; moves the weights a small step against their gradients (the learning rate warms up, then decays).&lt;/p&gt;&lt;p&gt;Every few steps the model reads the fixed &lt;b&gt;probe sentence&lt;/b&gt; and every head&apos;s attention is kept: drag the &lt;b&gt;Snapshot&lt;/b&gt; slider to watch it form — copying draws a diagonal in the cross-attention, reversing an anti-diagonal. Click a head to see it with its tokens. The curves show the loss, how many next tokens of the batch were right (teacher-forced), and the &lt;b&gt;held-out exact match&lt;/b&gt;: sentences never trained on, decoded greedily as the Decoding view does.&lt;/p&gt;&lt;p&gt;The model is PyTorch&apos;s translation tutorial&apos;s &lt;code&gt;Seq2SeqTransformer&lt;/code&gt; (&lt;code&gt;nn.Transformer&lt;/code&gt;): when training ends it is saved as safetensors with its config, and &lt;b&gt;Open in attnviz&lt;/b&gt; shows it in every other view.&lt;/p&gt;</source>
        <translation>&lt;p&gt;训练重复同一步：一批 64 个新的句对通过模型（教师强制：解码器读取 %1 + 目标），它对下一个词元预测的&lt;b&gt;交叉熵&lt;/b&gt;就是损失，&lt;b&gt;反向传播&lt;/b&gt;给每个权重算出梯度（前向传播的每个运算旁边都有它的反向运算），&lt;b&gt;Adam&lt;/b&gt; 把权重沿梯度的反方向移动一小步（学习率先预热，再衰减）。&lt;/p&gt;&lt;p&gt;每隔几步，模型读取固定的&lt;b&gt;探针句子&lt;/b&gt;，并保存每个头的注意力：拖动&lt;b&gt;快照&lt;/b&gt;滑块观察它如何形成 — 复制任务在交叉注意力中画出对角线，反转任务画出反对角线。点击一个头查看它和它的词元。曲线显示损失、这一批中预测正确的下一个词元有多少（教师强制），以及&lt;b&gt;留出集完全匹配&lt;/b&gt;：从未训练过的句子，像“解码”视图那样贪心解码。&lt;/p&gt;&lt;p&gt;模型是 PyTorch 翻译教程中的 &lt;code&gt;Seq2SeqTransformer&lt;/code&gt;（&lt;code&gt;nn.Transformer&lt;/code&gt;）：训练结束后它会连同配置保存为 safetensors，&lt;b&gt;在 attnviz 中打开&lt;/b&gt;会在其他每个视图中显示它。&lt;/p&gt;</translation>
    </message>
    <message>
        <source>Cannot create %1 to save the trained model in</source>
        <translation>无法创建 %1 来保存训练好的模型</translation>
    </message>
    <message>
        <source>Preparing…</source>
        <translation>准备中…</translation>
    </message>
    <message>
        <source>Probe sentence: &lt;b&gt;%1&lt;/b&gt; → &lt;b&gt;%2&lt;/b&gt; (teacher-forced; rows are queries, columns keys)</source>
        <translation>探针句子：&lt;b&gt;%1&lt;/b&gt; → &lt;b&gt;%2&lt;/b&gt;（教师强制；行是查询，列是键）</translation>
    </message>
    <message>
        <source>Stopped after %1 steps</source>
        <translation>在 %1 步后停止</translation>
    </message>
    <message>
        <source>Finished %1 steps</source>
        <translation>已完成 %1 步</translation>
    </message>
    <message>
        <source> in %1 s; held-out exact match %2 (%3 of %4); saved to %5</source>
        <translation>，用时 %1 秒；留出集完全匹配 %2（%4 个中 %3 个）；已保存到 %5</translation>
    </message>
    <message>
        <source>Training failed: %1</source>
        <translation>训练失败：%1</translation>
    </message>
    <message>
        <source>&lt;br&gt;Stopping…</source>
        <translation>&lt;br&gt;正在停止…</translation>
    </message>
    <message>
        <source>&lt;br&gt;Step &lt;b&gt;%1&lt;/b&gt; of %2 · %3 s · loss &lt;b&gt;%4&lt;/b&gt; · tokens %5 · sentences %6</source>
        <translation>&lt;br&gt;第 &lt;b&gt;%1&lt;/b&gt; 步，共 %2 步 · %3 秒 · 损失 &lt;b&gt;%4&lt;/b&gt; · 词元 %5 · 句子 %6</translation>
    </message>
    <message>
        <source> · held-out exact match &lt;b&gt;%1&lt;/b&gt; (step %2)</source>
        <translation> · 留出集完全匹配 &lt;b&gt;%1&lt;/b&gt;（第 %2 步）</translation>
    </message>
    <message>
        <source> · &lt;b&gt;paused&lt;/b&gt;</source>
        <translation> · &lt;b&gt;已暂停&lt;/b&gt;</translation>
    </message>
    <message>
        <source>Choose a task and a size, then Start. Training runs in the background; you can keep using the other views.</source>
        <translation>选择一个任务和大小，然后按“开始”。训练在后台运行；你可以继续使用其他视图。</translation>
    </message>
    <message>
        <source>step 0 (untrained)</source>
        <translation>第 0 步（未训练）</translation>
    </message>
    <message>
        <source>step %1 of %2 · loss %3</source>
        <translation>第 %1 步，共 %2 步 · 损失 %3</translation>
    </message>
    <message>
        <source>%1 · head %2 · step %3</source>
        <translation>%1 · 头 %2 · 第 %3 步</translation>
    </message>
    <message>
        <source>Save the trained model</source>
        <translation>保存训练好的模型</translation>
    </message>
    <message>
        <source>Models (*.safetensors)</source>
        <translation>模型 (*.safetensors)</translation>
    </message>
    <message>
        <source>Saved to %1</source>
        <translation>已保存到 %1</translation>
    </message>
    <message>
        <source>Could not save: %1</source>
        <translation>无法保存：%1</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::TrainWorker</name>
    <message>
        <source>%1 · %2 · %3 parameters · %4</source>
        <translation>%1 · %2 · %3 个参数 · %4</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::TrainingCurves</name>
    <message>
        <source>each step</source>
        <translation>每一步</translation>
    </message>
    <message>
        <source>running mean</source>
        <translation>滑动平均</translation>
    </message>
    <message>
        <source>tokens right (batch)</source>
        <translation>预测正确的词元（批次）</translation>
    </message>
    <message>
        <source>sentences right (batch)</source>
        <translation>正确的句子（批次）</translation>
    </message>
    <message>
        <source>held-out exact match (greedy)</source>
        <translation>留出集完全匹配（贪心）</translation>
    </message>
    <message>
        <source>Loss (cross-entropy, log scale)</source>
        <translation>损失（交叉熵，对数刻度）</translation>
    </message>
    <message>
        <source>Accuracy</source>
        <translation>准确率</translation>
    </message>
    <message>
        <source>Press Start</source>
        <translation>按“开始”</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::TranslationPanel</name>
    <message>
        <source>&lt;b&gt;Source&lt;/b&gt;</source>
        <translation>&lt;b&gt;源&lt;/b&gt;</translation>
    </message>
    <message>
        <source>&lt;b&gt;Translation&lt;/b&gt;</source>
        <translation>&lt;b&gt;译文&lt;/b&gt;</translation>
    </message>
    <message>
        <source>Hover a word to see %1 (%2, %3 layer %4, %5)</source>
        <translation>把鼠标悬停在一个词上查看%1（%2，%3第 %4 层，%5）</translation>
    </message>
    <message>
        <source>the words it looked at</source>
        <translation>它关注的词</translation>
    </message>
    <message>
        <source>where it looked on the other side</source>
        <translation>它在另一侧关注的位置</translation>
    </message>
    <message>
        <source>encoder</source>
        <translation>编码器</translation>
    </message>
    <message>
        <source>decoder</source>
        <translation>解码器</translation>
    </message>
    <message>
        <source>mean of heads</source>
        <translation>各头平均</translation>
    </message>
    <message>
        <source>head %1</source>
        <translation>头 %1</translation>
    </message>
    <message>
        <source>&lt;b&gt;Input&lt;/b&gt;</source>
        <translation>&lt;b&gt;输入&lt;/b&gt;</translation>
    </message>
    <message>
        <source>&lt;b&gt;Prompt and continuation&lt;/b&gt;</source>
        <translation>&lt;b&gt;提示与续写&lt;/b&gt;</translation>
    </message>
    <message>
        <source>(nothing decoded yet)</source>
        <translation>（尚未解码）</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::View</name>
    <message>
        <source>Attention</source>
        <translation>注意力</translation>
    </message>
    <message>
        <source>One kind, layer and head (or the mean of the heads) as a heatmap: queries as rows, keys as columns</source>
        <translation>一种注意力、一层、一个头（或各头平均）的热力图：查询为行，键为列</translation>
    </message>
    <message>
        <source>Overview</source>
        <translation>总览</translation>
    </message>
    <message>
        <source>Every layer × head of one kind as thumbnails; click one to open it</source>
        <translation>一种注意力的每个 层 × 头 的缩略图；点击一个打开</translation>
    </message>
    <message>
        <source>Masks</source>
        <translation>掩码</translation>
    </message>
    <message>
        <source>The padding and look-ahead masks, scores → masked scores → softmax, switches that turn a mask off, a padded batch</source>
        <translation>填充掩码和前瞻掩码，分数 → 掩码后的分数 → softmax，关闭掩码的开关，一个填充后的批次</translation>
    </message>
    <message>
        <source>Positional encoding</source>
        <translation>位置编码</translation>
    </message>
    <message>
        <source>PE(pos, dim) curves, the position × dimension matrix, the similarity of positions</source>
        <translation>PE(pos, dim) 曲线、位置 × 维度矩阵、位置之间的相似度</translation>
    </message>
    <message>
        <source>Decoding</source>
        <translation>解码</translation>
    </message>
    <message>
        <source>The translation step by step: the top-k next tokens (pick one to branch) and each step&apos;s new attention rows</source>
        <translation>一步一步的翻译：前 k 个下一个词元（选一个来分支）以及每一步新的注意力行</translation>
    </message>
    <message>
        <source>Architecture</source>
        <translation>架构</translation>
    </message>
    <message>
        <source>The model drawn as the paper&apos;s figure with this run&apos;s shapes; click a block for its activations</source>
        <translation>按论文中的图画出的模型，带有本次运行的形状；点击一个块查看它的激活</translation>
    </message>
    <message>
        <source>Inside a cell</source>
        <translation>单元格内部</translation>
    </message>
    <message>
        <source>One attention weight computed step by step: q · k, ÷ √d_k, the mask, the softmax row, the weighted values</source>
        <translation>一步一步地计算一个注意力权重：q · k、÷ √d_k、掩码、softmax 行、加权的值</translation>
    </message>
    <message>
        <source>Head statistics</source>
        <translation>注意力头统计</translation>
    </message>
    <message>
        <source>Every head&apos;s entropy and where its attention goes, sortable; badges on the Overview</source>
        <translation>每个头的熵及其注意力的去向，可排序；在“总览”上显示徽章</translation>
    </message>
    <message>
        <source>Before / after</source>
        <translation>前后对比</translation>
    </message>
    <message>
        <source>This run against a variation (a mask off, another sentence, heads switched off) and their difference</source>
        <translation>本次运行与一个变体（关闭一个掩码、换一个句子、关闭某些头）的对比及其差异</translation>
    </message>
    <message>
        <source>Why this token?</source>
        <translation>为什么是这个词元？</translation>
    </message>
    <message>
        <source>Why the model chose a token: what every layer predicts (the logit lens) and what every head and block adds to its logit</source>
        <translation>模型为什么选择一个词元：每一层预测什么（logit 透镜），以及每个头和每个块为它的 logit 贡献了什么</translation>
    </message>
    <message>
        <source>Head atlas</source>
        <translation>注意力头图谱</translation>
    </message>
    <message>
        <source>Every head over a whole corpus: a scatter of two statistics, a sortable table, its strongest sentences and its queries and keys projected</source>
        <translation>整个语料上的每个头：两项统计的散点图、可排序的表、它最强的句子，以及投影后的查询和键</translation>
    </message>
    <message>
        <source>Search</source>
        <translation>搜索</translation>
    </message>
    <message>
        <source>Sampling and beam search beyond greedy decoding; load any hypothesis into every view</source>
        <translation>贪心解码之外的采样和束搜索；可以把任何假设加载到每个视图</translation>
    </message>
    <message>
        <source>Train</source>
        <translation>训练</translation>
    </message>
    <message>
        <source>Train a Transformer on a task and watch its attention form</source>
        <translation>在一个任务上训练 Transformer，观察它的注意力如何形成</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::WhyPatchingTab</name>
    <message>
        <source>Corrupted input:</source>
        <translation>被破坏的输入：</translation>
    </message>
    <message>
        <source>The current input with one word changed: the run the clean activations are copied into. It must have as many tokens as the clean input, so that positions line up</source>
        <translation>改了一个词的当前输入：干净的激活会被复制到这次运行中。它必须与干净的输入有相同数量的词元，这样位置才能对齐</translation>
    </message>
    <message>
        <source>Run patching</source>
        <translation>运行激活修补</translation>
    </message>
    <message>
        <source>Copy every layer&apos;s residual stream at every position, and every head&apos;s output, from the clean run into the corrupted one, one at a time</source>
        <translation>把每一层在每个位置上的残差流，以及每个头的输出，逐个从干净的运行复制到被破坏的运行中</translation>
    </message>
    <message>
        <source>%v / %m runs</source>
        <translation>%v / %m 次运行</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Stop the sweep (Esc); the tab keeps what it showed</source>
        <translation>停止扫描 (Esc)；标签页保留已显示的内容</translation>
    </message>
    <message>
        <source>Change one word of the source (%1 tokens): the corrupted source must have as many tokens as the clean one, so that positions line up. The target stays the current run&apos;s.</source>
        <translation>改动源句中的一个词（%1 个词元）：被破坏的源句必须与干净的源句有相同数量的词元，这样位置才能对齐。目标保持当前运行的目标。</translation>
    </message>
    <message>
        <source>Change one word of the prompt (%1 tokens with the start token): the corrupted prompt must have as many tokens as the clean one, so that positions line up.</source>
        <translation>改动提示中的一个词（连同起始词元共 %1 个词元）：被破坏的提示必须与干净的提示有相同数量的词元，这样位置才能对齐。</translation>
    </message>
    <message>
        <source>Change one word of the prompt (%1 tokens): the corrupted prompt must have as many tokens as the clean one, so that positions line up.</source>
        <translation>改动提示中的一个词（%1 个词元）：被破坏的提示必须与干净的提示有相同数量的词元，这样位置才能对齐。</translation>
    </message>
    <message>
        <source>Press Run first: the clean input is the current run.</source>
        <translation>请先按“运行”：干净的输入就是当前运行。</translation>
    </message>
    <message>
        <source>Type the corrupted input: the current one with a word changed.</source>
        <translation>输入被破坏的输入：把当前输入改一个词。</translation>
    </message>
    <message>
        <source>Activation patching</source>
        <translation>激活修补</translation>
    </message>
    <message>
        <source>Cancelled: the heatmaps below are those of the run before.</source>
        <translation>已取消：下面的热力图是上一次运行的。</translation>
    </message>
    <message>
        <source>Busy: press Run patching again when the current job is done.</source>
        <translation>忙碌中：当前任务完成后请再按“运行激活修补”。</translation>
    </message>
    <message>
        <source>m = logit[%1] − logit[%2] at position %3: &lt;b&gt;m(clean) = %4&lt;/b&gt;, &lt;b&gt;m(corrupted) = %5&lt;/b&gt; (corrupted: “%6”). Each cell: the share of the difference that copying that one activation from the clean run brings back — 100% the clean margin whole, 0% nothing.</source>
        <translation>位置 %3 上的 m = logit[%1] − logit[%2]：&lt;b&gt;m(干净) = %4&lt;/b&gt;，&lt;b&gt;m(被破坏) = %5&lt;/b&gt;（被破坏的输入：“%6”）。每个格子：从干净的运行复制这一个激活能找回的差值份额 — 100% 为完全恢复干净的差值，0% 为毫无恢复。</translation>
    </message>
    <message>
        <source>Change a word of the corrupted input and press &lt;b&gt;Run patching&lt;/b&gt;: each layer&apos;s residual stream at each position, and each head, is copied from the clean run (the current one) into the corrupted run, one at a time.</source>
        <translation>改动被破坏输入中的一个词，然后按&lt;b&gt;运行激活修补&lt;/b&gt;：每一层在每个位置上的残差流，以及每个头，都会逐个从干净的运行（当前运行）复制到被破坏的运行中。</translation>
    </message>
    <message>
        <source>Patching… every layer, position and head is a run of its own.</source>
        <translation>激活修补中…每一层、每个位置和每个头都单独运行一次。</translation>
    </message>
    <message>
        <source>= %1 of the difference · m(patched) = %2 (clean %3, corrupted %4)</source>
        <translation>= 差值的 %1 · m(修补后) = %2（干净 %3，被破坏 %4）</translation>
    </message>
    <message>
        <source>layer</source>
        <translation>层</translation>
    </message>
    <message>
        <source>stream after ↓</source>
        <translation>之后的残差流 ↓</translation>
    </message>
    <message>
        <source>head</source>
        <translation>头</translation>
    </message>
    <message>
        <source>position · clean → corrupted token</source>
        <translation>位置 · 干净 → 被破坏的词元</translation>
    </message>
    <message>
        <source>row</source>
        <translation>行</translation>
    </message>
    <message>
        <source>position</source>
        <translation>位置</translation>
    </message>
    <message>
        <source>restored</source>
        <translation>已恢复</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:0&apos;&gt;&lt;b&gt;Activation patching&lt;/b&gt; asks which activations carry the difference between two inputs. The &lt;b&gt;clean&lt;/b&gt; input is the current run, the &lt;b&gt;corrupted&lt;/b&gt; one the same with a word changed; the model&apos;s answer changes with it. The metric is %1 at the explained position. Each cell copies &lt;i&gt;one&lt;/i&gt; activation of the clean run into the corrupted run and runs the rest of the model on: %2. Residual streams: the stream leaving a layer (row 0: the embeddings) at one position; heads: the head&apos;s output, before W&lt;sub&gt;O&lt;/sub&gt;, at every position.&lt;/p&gt;</source>
        <translation>&lt;p style='margin:0'&gt;&lt;b&gt;激活修补&lt;/b&gt;问的是哪些激活承载了两个输入之间的差异。&lt;b&gt;干净的&lt;/b&gt;输入是当前运行，&lt;b&gt;被破坏的&lt;/b&gt;输入是改了一个词的同一输入；模型的回答随之改变。度量是被解释位置上的 %1。每个格子把干净运行中的&lt;i&gt;一个&lt;/i&gt;激活复制到被破坏的运行中，然后继续运行模型的其余部分：%2。残差流：离开一层的残差流（第 0 行：嵌入）在一个位置上；头：该头在 W&lt;sub&gt;O&lt;/sub&gt; 之前的输出，在每个位置上。&lt;/p&gt;</translation>
    </message>
    <message>
        <source>m = logit[answer] − logit[foil]</source>
        <translation>m = logit[答案] − logit[干扰项]</translation>
    </message>
    <message>
        <source>restored = (m(patched) − m(corrupted)) / (m(clean) − m(corrupted))</source>
        <translation>恢复比例 = (m(修补后) − m(被破坏)) / (m(干净) − m(被破坏))</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:4px 0 0 0&apos;&gt;Here: m = logit[%1] − logit[%2] at position %3 of the %4, m(clean) = %5, m(corrupted) = %6 (corrupted: “%7”), %8 patched runs. Red: the patch brings the clean answer back (100% = whole), blue: it pushes further away; the last layer&apos;s stream restores 100% at the explained position and 0% elsewhere. Patching measures what an activation causes, not where a head looks.&lt;/p&gt;</source>
        <translation>&lt;p style='margin:4px 0 0 0'&gt;这里：%4的位置 %3 上 m = logit[%1] − logit[%2]，m(干净) = %5，m(被破坏) = %6（被破坏的输入：“%7”），共 %8 次修补运行。红色：修补把干净的答案找回来（100% = 完全），蓝色：把它推得更远；最后一层的残差流在被解释的位置上恢复 100%，其他位置为 0%。激活修补衡量的是一个激活造成了什么，而不是一个头看向哪里。&lt;/p&gt;</translation>
    </message>
    <message>
        <source>encoder</source>
        <translation>编码器</translation>
    </message>
    <message>
        <source>decoder</source>
        <translation>解码器</translation>
    </message>
    <message>
        <source>Activation patching · %1 rather than %2 at position %3 · corrupted: “%4”</source>
        <translation>激活修补 · 在位置 %3 上是 %1 而不是 %2 · 被破坏的输入：“%4”</translation>
    </message>
    <message>
        <source>Nothing to export: run patching first.</source>
        <translation>没有可导出的内容：请先运行激活修补。</translation>
    </message>
</context>
<context>
    <name>attnviz::gui::WhyView</name>
    <message>
        <source>What am I looking at?</source>
        <translation>我在看什么？</translation>
    </message>
    <message>
        <source>Position:</source>
        <translation>位置：</translation>
    </message>
    <message>
        <source>The position whose next token is explained (the Decoding view&apos;s step); the model predicts the token after the one read there</source>
        <translation>要解释其下一个词元的位置（“解码”视图中的步）；模型预测的是在那里读到的词元之后的词元</translation>
    </message>
    <message>
        <source>Explain:</source>
        <translation>解释：</translation>
    </message>
    <message>
        <source>The token explained: the model&apos;s choice, or another candidate (click a bar of the Decoding view&apos;s next-token chart and press “Why this token?” to come here with it)</source>
        <translation>被解释的词元：模型的选择，或者另一个候选（在“解码”视图的下一个词元图中点击一个条形，再按“为什么是这个词元？”即可带着它来到这里）</translation>
    </message>
    <message>
        <source>against the runner-up</source>
        <translation>对比第二名</translation>
    </message>
    <message>
        <source>Split logit[token] − logit[runner-up] instead of the logit: what makes the model prefer this token to its closest rival</source>
        <translation>拆分 logit[词元] − logit[第二名] 而不是 logit 本身：是什么让模型更喜欢这个词元而不是最接近的对手</translation>
    </message>
    <message>
        <source>Export CSV…</source>
        <translation>导出 CSV…</translation>
    </message>
    <message>
        <source>The tab shown as a table: every lens cell, or every contribution</source>
        <translation>以表格形式显示的标签页：每个透镜格子，或每项贡献</translation>
    </message>
    <message>
        <source>Export NumPy…</source>
        <translation>导出 NumPy…</translation>
    </message>
    <message>
        <source>lens_top_probs.npy, lens_target_probs.npy, lens.json and contributions.json into a folder (as attnviz-cli lens --dump); on the Attribution tab its SIDE_*.npy and attribution.json (as attnviz-cli attribute --dump). PNG, SVG and PDF: File › Export view</source>
        <translation>把 lens_top_probs.npy、lens_target_probs.npy、lens.json 和 contributions.json 写入一个文件夹（与 attnviz-cli lens --dump 相同）；在“归因”标签页上写入它的 SIDE_*.npy 和 attribution.json（与 attnviz-cli attribute --dump 相同）。PNG、SVG 和 PDF：文件 › 导出视图</translation>
    </message>
    <message>
        <source>Logit lens</source>
        <translation>Logit 透镜</translation>
    </message>
    <message>
        <source>What every layer would predict if the model stopped there</source>
        <translation>如果模型停在那一层，每一层会预测什么</translation>
    </message>
    <message>
        <source>Colour:</source>
        <translation>颜色：</translation>
    </message>
    <message>
        <source>probability of the explained token</source>
        <translation>被解释词元的概率</translation>
    </message>
    <message>
        <source>probability of each cell&apos;s top token</source>
        <translation>每个格子中最高词元的概率</translation>
    </message>
    <message>
        <source>What the colour shows; each cell names its own most probable token either way</source>
        <translation>颜色表示什么；无论哪种，每个格子都写出它自己概率最高的词元</translation>
    </message>
    <message>
        <source>Contributions</source>
        <translation>贡献</translation>
    </message>
    <message>
        <source>The logit split into what the embeddings, every head, every feed-forward block and the biases add to it</source>
        <translation>把 logit 拆分为嵌入、每个头、每个前馈块和偏置各自贡献的部分</translation>
    </message>
    <message>
        <source>Each part of the logit, largest first: red adds to it, blue takes from it. Click a head (or ↑ ↓ and Enter) to open its attention</source>
        <translation>logit 的每个部分，最大的在前：红色增加它，蓝色减少它。点击一个头（或 ↑ ↓ 和 Enter）打开它的注意力</translation>
    </message>
    <message>
        <source>Attribution</source>
        <translation>归因</translation>
    </message>
    <message>
        <source>How much each input token moves the explained logit (saliency, integrated gradients) beside where the chosen attention and rollout look</source>
        <translation>每个输入词元对被解释的 logit 影响多大（显著性、积分梯度），旁边是所选注意力和 rollout 关注的位置</translation>
    </message>
    <message>
        <source>Steps:</source>
        <translation>步数：</translation>
    </message>
    <message>
        <source>Integrated gradients&apos; steps N (the midpoint rule): more steps, a smaller completeness gap, a longer computation</source>
        <translation>积分梯度的步数 N（中点法则）：步数越多，完备性差距越小，计算越久</translation>
    </message>
    <message>
        <source>Attention of:</source>
        <translation>注意力来自：</translation>
    </message>
    <message>
        <source>The layer whose attention is set beside the attributions (default: the last, as attnviz-cli attribute; the source side uses its cross-attention)</source>
        <translation>放在归因旁边的注意力所在的层（默认：最后一层，与 attnviz-cli attribute 相同；源句一侧使用它的交叉注意力）</translation>
    </message>
    <message>
        <source>The head compared (default: the mean of the layer&apos;s heads, as attnviz-cli attribute)</source>
        <translation>比较的头（默认：该层各头的平均，与 attnviz-cli attribute 相同）</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Stop the computation (Esc); “Compute” runs it again</source>
        <translation>停止计算 (Esc)；“计算”会重新运行</translation>
    </message>
    <message>
        <source>Patching</source>
        <translation>激活修补</translation>
    </message>
    <message>
        <source>Which layer, position and head carry the difference between the current input and one with a word changed</source>
        <translation>哪一层、哪个位置、哪个头承载了当前输入与改了一个词的输入之间的差异</translation>
    </message>
    <message>
        <source>Export as CSV</source>
        <translation>导出为 CSV</translation>
    </message>
    <message>
        <source>CSV (*.csv)</source>
        <translation>CSV (*.csv)</translation>
    </message>
    <message>
        <source>Write the NumPy files into</source>
        <translation>把 NumPy 文件写入</translation>
    </message>
    <message>
        <source>Integrated gradients: %1 of %2 steps…</source>
        <translation>积分梯度：第 %1 步，共 %2 步…</translation>
    </message>
    <message>
        <source>Attribution cancelled</source>
        <translation>归因已取消</translation>
    </message>
    <message>
        <source>Direct contributions</source>
        <translation>直接贡献</translation>
    </message>
    <message>
        <source>Gradient attribution</source>
        <translation>梯度归因</translation>
    </message>
    <message>
        <source> · why %1 after “%2” (position %3)</source>
        <translation> · 为什么在“%2”之后是 %1（位置 %3）</translation>
    </message>
    <message>
        <source> rather than %1</source>
        <translation>，而不是 %1</translation>
    </message>
    <message>
        <source>integrated gradients, %1 steps: %2</source>
        <translation>积分梯度，%1 步：%2</translation>
    </message>
    <message>
        <source>Waiting for the current job…</source>
        <translation>正在等待当前任务…</translation>
    </message>
    <message>
        <source>Why this token?</source>
        <translation>为什么是这个词元？</translation>
    </message>
    <message>
        <source>Computing…</source>
        <translation>计算中…</translation>
    </message>
    <message>
        <source>%1 · after “%2”</source>
        <translation>%1 · 在“%2”之后</translation>
    </message>
    <message>
        <source>the model&apos;s choice: %1 (p = %2)</source>
        <translation>模型的选择：%1 (p = %2)</translation>
    </message>
    <message>
        <source>%1 (p = %2)</source>
        <translation>%1 (p = %2)</translation>
    </message>
    <message>
        <source>The logit lens appears here after a run.</source>
        <translation>运行之后，logit 透镜会显示在这里。</translation>
    </message>
    <message>
        <source>Nothing to show</source>
        <translation>没有可显示的内容</translation>
    </message>
    <message>
        <source>Top %1: %2
%3: probability %4, rank %5</source>
        <translation>前 %1：%2
%3：概率 %4，排名 %5</translation>
    </message>
    <message>
        <source>stream read after ↓</source>
        <translation>之后读取的残差流 ↓</translation>
    </message>
    <message>
        <source>positions → · the token read there</source>
        <translation>位置 → · 在那里读到的词元</translation>
    </message>
    <message>
        <source>row</source>
        <translation>行</translation>
    </message>
    <message>
        <source>position</source>
        <translation>位置</translation>
    </message>
    <message>
        <source>probability</source>
        <translation>概率</translation>
    </message>
    <message>
        <source>Each layer&apos;s most probable next token and its probability</source>
        <translation>每一层概率最高的下一个词元及其概率</translation>
    </message>
    <message>
        <source>Colour: probability of the model&apos;s final choice at each position · written: each layer&apos;s top token</source>
        <translation>颜色：每个位置上模型最终选择的概率 · 文字：每一层概率最高的词元</translation>
    </message>
    <message>
        <source>Colour: probability of %1 at every position · written: each layer&apos;s top token</source>
        <translation>颜色：每个位置上 %1 的概率 · 文字：每一层概率最高的词元</translation>
    </message>
    <message>
        <source>%1 is never the top token there (rank %2 at the last layer)</source>
        <translation>%1 在那里从未成为概率最高的词元（最后一层排名 %2）</translation>
    </message>
    <message>
        <source>%1 is the top token from the embeddings on</source>
        <translation>从嵌入开始，%1 就是概率最高的词元</translation>
    </message>
    <message>
        <source>%1 becomes the top token at %2</source>
        <translation>%1 在 %2 成为概率最高的词元</translation>
    </message>
    <message>
        <source>At position %1 (after “%2”, outlined): %3; it ends with probability %4. Hover a cell for its top %5.</source>
        <translation>在位置 %1（“%2”之后，带边框）：%3；最终概率为 %4。悬停在格子上查看前 %5 个。</translation>
    </message>
    <message>
        <source>&lt;b&gt;No direct contributions for this model.&lt;/b&gt; %1%2</source>
        <translation>&lt;b&gt;此模型没有直接贡献。&lt;/b&gt;%1%2</translation>
    </message>
    <message>
        <source>&lt;br&gt;&lt;br&gt;The bundled &lt;i&gt;reverse&lt;/i&gt; model is pre-norm: choose it under Model to see a logit split into its parts.</source>
        <translation>&lt;br&gt;&lt;br&gt;内置的 &lt;i&gt;reverse&lt;/i&gt; 模型是前置归一化的：在“模型”中选择它，就能看到一个 logit 被拆分成各个部分。</translation>
    </message>
    <message>
        <source>The contributions appear here after a run.</source>
        <translation>运行之后，贡献会显示在这里。</translation>
    </message>
    <message>
        <source>part of logit[%1] − logit[%2]</source>
        <translation>logit[%1] − logit[%2] 中的份额</translation>
    </message>
    <message>
        <source>part of logit[%1]</source>
        <translation>logit[%1] 中的份额</translation>
    </message>
    <message>
        <source>logit[%1] − logit[%2]</source>
        <translation>logit[%1] − logit[%2]</translation>
    </message>
    <message>
        <source>logit[%1]</source>
        <translation>logit[%1]</translation>
    </message>
    <message>
        <source>&lt;b&gt;%1 = %2&lt;/b&gt; at position %3 = the sum of the %4 parts below, %5 (difference %6). Red adds, blue takes away; ↗ marks a head: click it to open its attention.</source>
        <translation>&lt;b&gt;%1 = %2&lt;/b&gt;，在位置 %3 = 下面 %4 个部分之和，%5（差 %6）。红色增加，蓝色减少；↗ 标记一个头：点击打开它的注意力。</translation>
    </message>
    <message>
        <source>layer %1 (last)</source>
        <translation>第 %1 层（最后）</translation>
    </message>
    <message>
        <source>layer %1</source>
        <translation>第 %1 层</translation>
    </message>
    <message>
        <source>mean of heads</source>
        <translation>各头平均</translation>
    </message>
    <message>
        <source>head %1</source>
        <translation>头 %1</translation>
    </message>
    <message>
        <source>Integrated gradients</source>
        <translation>积分梯度</translation>
    </message>
    <message>
        <source>Integrated gradients…</source>
        <translation>积分梯度…</translation>
    </message>
    <message>
        <source>Compute</source>
        <translation>计算</translation>
    </message>
    <message>
        <source>Computing the gradients along the path from the baseline to the input…</source>
        <translation>正在沿从基线到输入的路径计算梯度…</translation>
    </message>
    <message>
        <source>&lt;b&gt;No attribution:&lt;/b&gt; %1</source>
        <translation>&lt;b&gt;没有归因：&lt;/b&gt;%1</translation>
    </message>
    <message>
        <source>Cancelled. Press Compute (or change a setting) to compute it again.</source>
        <translation>已取消。按“计算”（或更改设置）重新计算。</translation>
    </message>
    <message>
        <source>The attribution appears here after a run.</source>
        <translation>运行之后，归因会显示在这里。</translation>
    </message>
    <message>
        <source>&lt;span style=&apos;color:#c0392b&apos;&gt;&lt;b&gt;⚠ %1&lt;/b&gt; — over 1 %: too few steps (N = %2) to follow the path (the gradient changes quickly along it); raise the steps until the gap is small before trusting the bars.&lt;/span&gt;</source>
        <translation>&lt;span style='color:#c0392b'&gt;&lt;b&gt;⚠ %1&lt;/b&gt; — 超过 1 %：步数太少（N = %2），跟不上这条路径（梯度沿路径变化很快）；请增加步数直到差距变小，再相信这些条形。&lt;/span&gt;</translation>
    </message>
    <message>
        <source> ✓</source>
        <translation> ✓</translation>
    </message>
    <message>
        <source>&lt;b&gt;f = %1 = %2&lt;/b&gt; at position %3 (after “%4”).&lt;br&gt;%5%6</source>
        <translation>&lt;b&gt;f = %1 = %2&lt;/b&gt;，在位置 %3（“%4”之后）。&lt;br&gt;%5%6</translation>
    </message>
    <message>
        <source>&lt;br&gt;&lt;i&gt;Computed with the usual masks: the masks switched off in this run do not apply here.&lt;/i&gt;</source>
        <translation>&lt;br&gt;&lt;i&gt;使用通常的掩码计算：本次运行中关闭的掩码在这里不适用。&lt;/i&gt;</translation>
    </message>
    <message>
        <source>Integrated gradients: red pushes f up, blue pulls it down</source>
        <translation>积分梯度：红色把 f 推高，蓝色把它拉低</translation>
    </message>
    <message>
        <source>Saliency Σ gradient × input at the input itself</source>
        <translation>显著性：在输入处的 Σ 梯度 × 输入</translation>
    </message>
    <message>
        <source>The chosen head&apos;s attention from the explained position</source>
        <translation>所选头从被解释位置出发的注意力</translation>
    </message>
    <message>
        <source>Attention rollout&apos;s row at the explained position</source>
        <translation>被解释位置上的注意力 rollout 行</translation>
    </message>
    <message>
        <source>integrated gradients</source>
        <translation>积分梯度</translation>
    </message>
    <message>
        <source>saliency Σ g·x</source>
        <translation>显著性 Σ g·x</translation>
    </message>
    <message>
        <source>attention</source>
        <translation>注意力</translation>
    </message>
    <message>
        <source>rollout</source>
        <translation>rollout</translation>
    </message>
    <message>
        <source>&lt;b&gt;%1&lt;/b&gt;%2 · Spearman&apos;s ρ of |integrated gradients| with the attention &lt;b&gt;%3&lt;/b&gt;, with rollout &lt;b&gt;%4&lt;/b&gt;&lt;br&gt;&lt;span style=&apos;color:gray&apos;&gt;attention: %5; rollout: %6&lt;/span&gt;</source>
        <translation>&lt;b&gt;%1&lt;/b&gt;%2 · |积分梯度| 与注意力的 Spearman ρ &lt;b&gt;%3&lt;/b&gt;，与 rollout 的 &lt;b&gt;%4&lt;/b&gt;&lt;br&gt;&lt;span style='color:gray'&gt;注意力：%5；rollout：%6&lt;/span&gt;</translation>
    </message>
    <message>
        <source>Source tokens</source>
        <translation>源词元</translation>
    </message>
    <message>
        <source>Target tokens</source>
        <translation>目标词元</translation>
    </message>
    <message>
        <source>Tokens</source>
        <translation>词元</translation>
    </message>
    <message>
        <source> 1–%1 (those position %2 sees)</source>
        <translation> 1–%1（位置 %2 能看到的）</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:0&apos;&gt;&lt;b&gt;Why this token?&lt;/b&gt; After a run this view shows why the model chose its next token: the &lt;b&gt;logit lens&lt;/b&gt; (what every layer would predict) and the &lt;b&gt;direct contributions&lt;/b&gt; (the token&apos;s logit split into the parts that add up to it).&lt;/p&gt;</source>
        <translation>&lt;p style='margin:0'&gt;&lt;b&gt;为什么是这个词元？&lt;/b&gt;运行之后，这个视图显示模型为什么选择了它的下一个词元：&lt;b&gt;logit 透镜&lt;/b&gt;（每一层会预测什么）和&lt;b&gt;直接贡献&lt;/b&gt;（把这个词元的 logit 拆分为相加得到它的各个部分）。&lt;/p&gt;</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:0&apos;&gt;&lt;b&gt;The logit lens&lt;/b&gt; reads the residual stream of every layer as if the model stopped there: %1 = softmax(%2) for each row l and position i. Rows: %3.&lt;/p&gt;&lt;p style=&apos;margin:4px 0 0 0&apos;&gt;The last row is the model&apos;s own prediction; the first row whose top token matches it shows the layer that settles the choice. Colour: the probability of the explained token (or of each cell&apos;s top token); written in each cell: that row&apos;s most probable token and its probability.&lt;/p&gt;</source>
        <translation>&lt;p style='margin:0'&gt;&lt;b&gt;logit 透镜&lt;/b&gt;把每一层的残差流当作模型在那里停下来一样去读：对每一行 l 和位置 i，%1 = softmax(%2)。行：%3。&lt;/p&gt;&lt;p style='margin:4px 0 0 0'&gt;最后一行是模型自己的预测；第一个最高词元与它一致的行，就是确定这个选择的那一层。颜色：被解释词元的概率（或每个格子最高词元的概率）；每个格子里写的是：那一行概率最高的词元及其概率。&lt;/p&gt;</translation>
    </message>
    <message>
        <source>p&lt;sub&gt;l,i&lt;/sub&gt;</source>
        <translation>p&lt;sub&gt;l,i&lt;/sub&gt;</translation>
    </message>
    <message>
        <source>N(x&lt;sub&gt;l,i&lt;/sub&gt;) W&lt;sub&gt;U&lt;/sub&gt;ᵀ + b</source>
        <translation>N(x&lt;sub&gt;l,i&lt;/sub&gt;) W&lt;sub&gt;U&lt;/sub&gt;ᵀ + b</translation>
    </message>
    <message>
        <source>x&lt;sub&gt;l,i&lt;/sub&gt; W&lt;sub&gt;U&lt;/sub&gt;ᵀ + b</source>
        <translation>x&lt;sub&gt;l,i&lt;/sub&gt; W&lt;sub&gt;U&lt;/sub&gt;ᵀ + b</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:0&apos;&gt;&lt;b&gt;Direct contributions&lt;/b&gt; split a logit into the parts of the residual stream that add up to it. %1&lt;/p&gt;</source>
        <translation>&lt;p style='margin:0'&gt;&lt;b&gt;直接贡献&lt;/b&gt;把一个 logit 拆分为残差流中相加得到它的各个部分。%1&lt;/p&gt;</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:0&apos;&gt;&lt;b&gt;Direct contributions.&lt;/b&gt; The logit is %1 with the final norm %2. Freezing its scale s = 1/σ at this input (s = %3) makes the logit linear in the stream, and the stream of a pre-norm model is a sum: %4. So each piece adds its own part %5 (P centres, γ is the norm&apos;s weight), and %6 = %7 = Σ parts = %8 (gap %9).&lt;/p&gt;&lt;p style=&apos;margin:4px 0 0 0&apos;&gt;A head&apos;s part is its output through its slice of W&lt;sub&gt;O&lt;/sub&gt;; %10 %11&lt;/p&gt;</source>
        <translation>&lt;p style='margin:0'&gt;&lt;b&gt;直接贡献。&lt;/b&gt;logit 是 %1，最终归一化为 %2。把它在这个输入上的缩放 s = 1/σ 固定（s = %3），logit 就对残差流是线性的，而前置归一化模型的残差流是一个求和：%4。所以每一部分贡献自己的一份 %5（P 减去均值，γ 是归一化的权重），并且 %6 = %7 = Σ 各部分 = %8（差距 %9）。&lt;/p&gt;&lt;p style='margin:4px 0 0 0'&gt;一个头的部分是它的输出经过它在 W&lt;sub&gt;O&lt;/sub&gt; 中的切片；%10 %11&lt;/p&gt;</translation>
    </message>
    <message>
        <source>u · N(x) + b</source>
        <translation>u · N(x) + b</translation>
    </message>
    <message>
        <source>N(x) = γ ⊙ x · s</source>
        <translation>N(x) = γ ⊙ x · s</translation>
    </message>
    <message>
        <source>N(x) = γ ⊙ (x − mean x) · s + β</source>
        <translation>N(x) = γ ⊙ (x − mean x) · s + β</translation>
    </message>
    <message>
        <source>x = embeddings + Σ&lt;sub&gt;layers&lt;/sub&gt; (Σ&lt;sub&gt;heads&lt;/sub&gt; head·W&lt;sub&gt;O&lt;/sub&gt; + feed-forward + biases)</source>
        <translation>x = 嵌入 + Σ&lt;sub&gt;各层&lt;/sub&gt; (Σ&lt;sub&gt;各头&lt;/sub&gt; head·W&lt;sub&gt;O&lt;/sub&gt; + 前馈网络 + 偏置)</translation>
    </message>
    <message>
        <source>(P(u ⊙ γ) · s) · piece</source>
        <translation>(P(u ⊙ γ) · s) · piece</translation>
    </message>
    <message>
        <source>the encoder reaches the decoder&apos;s stream only through the cross-attention heads, so their parts carry the source&apos;s share.</source>
        <translation>编码器只通过交叉注意力头进入解码器的残差流，所以它们的部分承载了源句的份额。</translation>
    </message>
    <message>
        <source>Direct means the path straight to the logits: a head whose output later heads read shows its effect in theirs, not here (activation patching measures that).</source>
        <translation>“直接”指直达 logits 的路径：如果一个头的输出被后面的头读取，它的作用体现在后者中，而不在这里（激活修补衡量的是那个）。</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:0&apos;&gt;&lt;b&gt;Gradient attribution&lt;/b&gt; asks how much each input token moves f, the explained logit. The input of token i is its embedding row e&lt;sub&gt;i&lt;/sub&gt; as the model adds it (positions and segments are held fixed: they are the same for every sentence). &lt;b&gt;Saliency&lt;/b&gt; = %1 at the input: positive pushes f up. &lt;b&gt;Integrated gradients&lt;/b&gt; walk from a baseline e′ to e in N steps: %2.&lt;/p&gt;</source>
        <translation>&lt;p style='margin:0'&gt;&lt;b&gt;梯度归因&lt;/b&gt;问的是每个输入词元能让 f（被解释的 logit）变化多少。词元 i 的输入是模型加入的它的嵌入行 e&lt;sub&gt;i&lt;/sub&gt;（位置和片段保持不变：它们对每个句子都相同）。&lt;b&gt;显著性&lt;/b&gt; = 输入处的 %1：正值把 f 推高。&lt;b&gt;积分梯度&lt;/b&gt;用 N 步从基线 e′ 走到 e：%2。&lt;/p&gt;</translation>
    </message>
    <message>
        <source>Σ&lt;sub&gt;d&lt;/sub&gt; ∂f/∂e&lt;sub&gt;i,d&lt;/sub&gt; · e&lt;sub&gt;i,d&lt;/sub&gt;</source>
        <translation>Σ&lt;sub&gt;d&lt;/sub&gt; ∂f/∂e&lt;sub&gt;i,d&lt;/sub&gt; · e&lt;sub&gt;i,d&lt;/sub&gt;</translation>
    </message>
    <message>
        <source>IG&lt;sub&gt;i&lt;/sub&gt; = Σ&lt;sub&gt;d&lt;/sub&gt; e&lt;sub&gt;i,d&lt;/sub&gt; · (1/N) Σ&lt;sub&gt;k&lt;/sub&gt; ∂f/∂e&lt;sub&gt;i,d&lt;/sub&gt;(α&lt;sub&gt;k&lt;/sub&gt; e), α&lt;sub&gt;k&lt;/sub&gt; = (k + ½)/N</source>
        <translation>IG&lt;sub&gt;i&lt;/sub&gt; = Σ&lt;sub&gt;d&lt;/sub&gt; e&lt;sub&gt;i,d&lt;/sub&gt; · (1/N) Σ&lt;sub&gt;k&lt;/sub&gt; ∂f/∂e&lt;sub&gt;i,d&lt;/sub&gt;(α&lt;sub&gt;k&lt;/sub&gt; e), α&lt;sub&gt;k&lt;/sub&gt; = (k + ½)/N</translation>
    </message>
    <message>
        <source>&lt;p style=&apos;margin:4px 0 0 0&apos;&gt;Here f = %1 at position %2 = %3; the baseline: %4, where f = %5; N = %6 (%7). &lt;b&gt;Completeness&lt;/b&gt;: the attributions of every token add up to f(e) − f(e′): Σ IG = %8 against %9, a gap of %10 %. A gap over 1 % means too few steps.&lt;/p&gt;&lt;p style=&apos;margin:4px 0 0 0&apos;&gt;Beside them: where the chosen attention and attention rollout look from the position. Spearman&apos;s ρ compares the ranks of |IG| with each: near 1, attention and attribution tell the same story; near 0 or below, a token can be looked at without moving the output, or move it without being looked at. Each chart has its own scale: read its axis before comparing lengths.&lt;/p&gt;</source>
        <translation>&lt;p style='margin:4px 0 0 0'&gt;这里位置 %2 上 f = %1 = %3；基线：%4，此时 f = %5；N = %6（%7）。&lt;b&gt;完备性&lt;/b&gt;：所有词元的归因加起来等于 f(e) − f(e′)：Σ IG = %8，对比 %9，差距 %10 %。差距超过 1 % 说明步数太少。&lt;/p&gt;&lt;p style='margin:4px 0 0 0'&gt;旁边是：所选注意力和注意力 rollout 从这个位置看向哪里。Spearman ρ 比较 |IG| 的排名与两者的排名：接近 1，注意力和归因讲的是同一个故事；接近 0 或更低，一个词元可能被关注却不影响输出，或者影响输出却没有被关注。每个图有自己的刻度：比较长度之前先看它的坐标轴。&lt;/p&gt;</translation>
    </message>
    <message>
        <source>∞</source>
        <translation>∞</translation>
    </message>
    <message>
        <source>Nothing to export in this tab.</source>
        <translation>此标签页没有可导出的内容。</translation>
    </message>
    <message>
        <source>Could not write %1: %2</source>
        <translation>无法写入 %1：%2</translation>
    </message>
    <message>
        <source>Nothing to export: the attribution has not been computed.</source>
        <translation>没有可导出的内容：归因还没有计算。</translation>
    </message>
    <message>
        <source>Nothing to export: the lens has not been computed.</source>
        <translation>没有可导出的内容：透镜还没有计算。</translation>
    </message>
    <message>
        <source>embeddings</source>
        <translation>嵌入</translation>
    </message>
</context>
</TS>
