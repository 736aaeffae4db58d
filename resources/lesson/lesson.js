// The lesson page: reads the run that attnviz wrote into #lesson-data and draws it — heatmaps on
// canvases with hover, the overview grid, the masks and the decoding steps. Plain JavaScript, no
// library, nothing fetched.
(function () {
  'use strict';

  const data = JSON.parse(document.getElementById('lesson-data').textContent);
  const $ = (id) => document.getElementById(id);
  const scale = data.precision.scale;
  const decimals = data.precision.decimals;

  // ---- the arrays: base64 → probabilities (quantized), raw scores (binary16), masks ----

  function bytesOf(b64) {
    const s = atob(b64);
    const out = new Uint8Array(s.length);
    for (let i = 0; i < s.length; ++i) out[i] = s.charCodeAt(i);
    return out;
  }

  function halfToFloat(h) {
    const sign = h & 0x8000 ? -1 : 1;
    const e = (h >> 10) & 0x1f;
    const m = h & 0x3ff;
    if (e === 0) return sign * m * Math.pow(2, -24);
    if (e === 31) return m ? NaN : sign * Infinity;
    return sign * (1 + m / 1024) * Math.pow(2, e - 15);
  }

  const kinds = data.kinds;
  const kindByName = {};
  for (const k of kinds) kindByName[k.name] = k;
  const blockData = {};
  for (const b of data.blocks) blockData[b.kind + '/' + b.layer] = b;
  const decoded = {};

  // One block: probs and scores as [heads kept + 1][q][k] (the mean last), the mask as [q][k].
  function block(kindName, layer) {
    const key = kindName + '/' + layer;
    if (decoded[key]) return decoded[key];
    const raw = blockData[key];
    const kind = kindByName[kindName];
    const q = kind.q_len, k = kind.k_len, cells = q * k;
    const n = data.heads.length + 1;
    const pb = bytesOf(raw.probs);
    const probs = new Float64Array(n * cells);
    if (data.precision.bits === 8) {
      for (let i = 0; i < probs.length; ++i) probs[i] = pb[i] / scale;
    } else {
      for (let i = 0; i < probs.length; ++i) probs[i] = (pb[2 * i] | (pb[2 * i + 1] << 8)) / scale;
    }
    let scores = null;
    if (raw.has_scores) {
      const sb = bytesOf(raw.scores);
      scores = new Float64Array(n * cells);
      for (let i = 0; i < scores.length; ++i) scores[i] = halfToFloat(sb[2 * i] | (sb[2 * i + 1] << 8));
    }
    const mask = bytesOf(raw.mask);
    decoded[key] = { q, k, probs, scores, mask, n };
    return decoded[key];
  }

  // The matrix index of a head: its place among the heads kept, or the mean (last) for -1.
  function headIndex(head) {
    return head < 0 ? data.heads.length : data.heads.indexOf(head);
  }

  function tokensOf(side) {
    return side === 'source' ? data.source : data.target;
  }

  // ---- colours: viridis, as in the application ----

  const viridis = [
    [68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142],
    [31, 158, 137], [53, 183, 121], [109, 205, 89], [180, 222, 44], [253, 231, 37]];
  // The application's masked cells (its viridis map): a light grey, hatched in a darker one.
  const MASKED_FILL = '#d6d6d6', MASKED_HATCH = '#8a8a8a';

  function colour(t) {
    t = Math.min(1, Math.max(0, isFinite(t) ? t : 0)) * (viridis.length - 1);
    const i = Math.min(viridis.length - 2, Math.floor(t)), f = t - i;
    const a = viridis[i], b = viridis[i + 1];
    return 'rgb(' + [0, 1, 2].map((c) => Math.round(a[c] + (b[c] - a[c]) * f)).join(',') + ')';
  }

  function fmt(v, d) {
    if (v === undefined || v === null || Number.isNaN(v)) return '—';
    if (!isFinite(v)) return v > 0 ? '+∞' : '−∞';
    return v.toFixed(d).replace('-', '−');
  }
  // A probability of the next token: small ones as 3.2e−6 rather than 0.0000.
  function fmtSmall(v) {
    return v !== 0 && Math.abs(v) < 1e-4 ? v.toExponential(1).replace('-', '−') : fmt(v, 4);
  }

  // ---- drawing a labelled heatmap on a canvas ----

  const font = '13px "DejaVu Sans", "Segoe UI", Roboto, Helvetica, Arial, sans-serif';

  // Draws values [rows][cols] (a flat array from `offset`) with labels; masked cells hatched.
  // Returns the geometry that hover needs.
  function drawHeatmap(canvas, m) {
    const ctx = canvas.getContext('2d');
    ctx.font = font;
    const labelWidth = (labels) => Math.max(20, ...labels.map((s) => ctx.measureText(s).width));
    const left = Math.ceil(labelWidth(m.rowLabels)) + 12;
    const top = Math.ceil(labelWidth(m.colLabels)) + 12;
    // Cells of 12 to 36 pixels; long sentences get smaller ones (at least 3) with every n-th label.
    const cell = m.cell || Math.max(3, Math.min(36, Math.floor(720 / Math.max(m.rows, m.cols))));
    const every = Math.ceil(12 / cell);
    const width = left + cell * m.cols + 8, height = top + cell * m.rows + 8;
    const ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    canvas.style.width = width + 'px';
    canvas.style.height = height + 'px';
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, width, height);
    ctx.font = font;
    ctx.fillStyle = '#1d2330';
    ctx.textBaseline = 'middle';
    ctx.textAlign = 'right';
    m.rowLabels.forEach((s, i) => {
      if (i % every === 0) ctx.fillText(s, left - 6, top + (i + 0.5) * cell);
    });
    ctx.save();
    ctx.textAlign = 'left';
    m.colLabels.forEach((s, j) => {
      if (j % every !== 0) return;
      ctx.save();
      ctx.translate(left + (j + 0.5) * cell, top - 6);
      ctx.rotate(-Math.PI / 2);
      ctx.fillText(s, 0, 0);
      ctx.restore();
    });
    ctx.restore();
    let lo = m.min, hi = m.max;
    if (lo === undefined || hi === undefined) {
      lo = Infinity;
      hi = -Infinity;
      for (let i = 0; i < m.rows; ++i)
        for (let j = 0; j < m.cols; ++j) {
          if (m.masked && m.masked(i, j)) continue;
          const v = m.value(i, j);
          if (isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
        }
      if (!isFinite(lo)) { lo = 0; hi = 1; }
      if (m.zeroBased) lo = 0;
    }
    const span = hi > lo ? hi - lo : 1;
    for (let i = 0; i < m.rows; ++i)
      for (let j = 0; j < m.cols; ++j) {
        const x = left + j * cell, y = top + i * cell;
        const masked = m.masked && m.masked(i, j);
        // Masked cells as the application draws them: grey, hatched where there is room.
        ctx.fillStyle = masked ? MASKED_FILL : m.allowedFill || colour((m.value(i, j) - lo) / span);
        ctx.fillRect(x, y, cell, cell);
        if (masked && cell >= 6) hatch(ctx, x, y, cell);
      }
    ctx.strokeStyle = '#888';
    ctx.lineWidth = 1;
    ctx.strokeRect(left - 0.5, top - 0.5, cell * m.cols + 1, cell * m.rows + 1);
    return { left, top, cell, rows: m.rows, cols: m.cols, lo, hi };
  }

  function hatch(ctx, x, y, size) {
    ctx.save();
    ctx.beginPath();
    ctx.rect(x, y, size, size);
    ctx.clip();
    ctx.strokeStyle = MASKED_HATCH;
    ctx.lineWidth = 1;
    const stride = Math.max(4, size / 4);
    for (let d = -size; d < size; d += stride) {
      ctx.beginPath();
      ctx.moveTo(x + d, y + size);
      ctx.lineTo(x + d + size, y);
      ctx.stroke();
    }
    ctx.restore();
  }

  // The cell under a mouse event, or null.
  function cellAt(canvas, geometry, event) {
    const r = canvas.getBoundingClientRect();
    const x = event.clientX - r.left - geometry.left, y = event.clientY - r.top - geometry.top;
    const i = Math.floor(y / geometry.cell), j = Math.floor(x / geometry.cell);
    if (x < 0 || y < 0 || i >= geometry.rows || j >= geometry.cols) return null;
    return { i, j };
  }

  const tooltip = $('tooltip');
  function showTooltip(event, html) {
    tooltip.innerHTML = html;
    tooltip.hidden = false;
    const pad = 14;
    let x = event.clientX + pad, y = event.clientY + pad;
    const w = tooltip.offsetWidth, h = tooltip.offsetHeight;
    if (x + w > window.innerWidth) x = event.clientX - w - pad;
    if (y + h > window.innerHeight) y = event.clientY - h - pad;
    tooltip.style.left = Math.max(0, x) + 'px';
    tooltip.style.top = Math.max(0, y) + 'px';
  }
  function hideTooltip() {
    tooltip.hidden = true;
  }

  function escapeHtml(s) {
    return String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
  }

  // What hover says of one cell of a block: query and key (counted from 1, with their tokens),
  // probability, raw score, masked or not.
  function cellText(kind, b, hi, i, j) {
    const q = tokensOf(kind.query_side)[i], k = tokensOf(kind.key_side)[j];
    const p = b.probs[(hi * b.q + i) * b.k + j];
    const s = b.scores ? b.scores[(hi * b.q + i) * b.k + j] : NaN;
    const masked = b.mask[i * b.k + j] !== 0;
    return '<div>query <b>' + (i + 1) + '</b> “' + escapeHtml(q) + '” → key <b>' + (j + 1) +
      '</b> “' + escapeHtml(k) + '”</div>' +
      '<div class="prob">probability <b data-probability="' + p + '">' + fmt(p, decimals) + '</b></div>' +
      '<div>raw score ' + (b.scores ? fmt(s, 3) : 'not kept') + '</div>' +
      (masked ? '<div><b>masked</b>: the score is replaced by ' + escapeHtml(data.model.mask_fill) +
        ' before softmax</div>' : '<div>not masked</div>');
  }

  // ---- state ----

  const hasSteps = data.steps.length > 0;
  const state = {
    view: data.start.view,
    kind: kindByName[data.start.kind] ? data.start.kind : kinds[0].name,
    layer: data.start.layer,
    head: data.start.head,
    values: 'probs',
    step: data.start.step,
  };
  function kind() {
    return kindByName[state.kind];
  }
  function clampState() {
    const k = kind();
    if (k.layers.indexOf(state.layer) < 0) state.layer = k.layers[k.layers.length - 1];
    if (state.head >= 0 && data.heads.indexOf(state.head) < 0) state.head = -1;
    if (!hasSteps && state.view === 'decoding') state.view = 'attention';
    if (['attention', 'overview', 'masks', 'decoding'].indexOf(state.view) < 0) state.view = 'attention';
    if (hasSteps && (state.step < 0 || state.step >= data.steps.length)) state.step = data.steps.length - 1;
  }

  function headName(h) {
    return h < 0 ? 'mean of the heads' : 'head ' + (h + 1);
  }

  // ---- the controls ----

  function fillSelect(select, items, value) {
    select.innerHTML = '';
    for (const [v, text] of items) {
      const o = document.createElement('option');
      o.value = String(v);
      o.textContent = text;
      select.appendChild(o);
    }
    select.value = String(value);
  }

  function updateControls() {
    fillSelect($('kind'), kinds.map((k) => [k.name, k.title]), state.kind);
    fillSelect($('layer'), kind().layers.map((l) => [l, 'layer ' + (l + 1)]), state.layer);
    fillSelect($('head'), [[-1, 'mean of the heads']].concat(data.heads.map((h) => [h, 'head ' + (h + 1)])),
      state.head);
    $('values').value = state.values;
    for (const b of document.querySelectorAll('#tabs button')) {
      b.classList.toggle('active', b.dataset.view === state.view);
      if (b.dataset.view === 'decoding') b.disabled = !hasSteps;
    }
    for (const v of document.querySelectorAll('.view')) v.classList.toggle('active', v.id === 'view-' + state.view);
  }

  $('kind').addEventListener('change', (e) => { state.kind = e.target.value; render(); });
  $('layer').addEventListener('change', (e) => { state.layer = Number(e.target.value); render(); });
  $('head').addEventListener('change', (e) => { state.head = Number(e.target.value); render(); });
  $('values').addEventListener('change', (e) => { state.values = e.target.value; render(); });
  for (const b of document.querySelectorAll('#tabs button'))
    b.addEventListener('click', () => { state.view = b.dataset.view; render(); });

  // ---- the views ----

  let geometry = null;

  function renderAttention() {
    const k = kind(), b = block(k.name, state.layer), hi = headIndex(state.head);
    const off = hi * b.q * b.k;
    const source = state.values === 'scores' && b.scores ? b.scores : b.probs;
    $('attention-heading').textContent = k.title + ' · layer ' + (state.layer + 1) + ' · ' + headName(state.head);
    geometry = drawHeatmap($('heatmap'), {
      rows: b.q, cols: b.k,
      rowLabels: tokensOf(k.query_side), colLabels: tokensOf(k.key_side),
      value: (i, j) => source[off + i * b.k + j],
      masked: (i, j) => b.mask[i * b.k + j] !== 0,
      zeroBased: source === b.probs,
    });
    $('legend').textContent = 'Rows: queries (' + k.query_side + ' tokens). Columns: keys (' + k.key_side +
      ' tokens). Colour: ' + (source === b.probs ? 'probability' : 'raw score') + ' from ' +
      fmt(geometry.lo, 3) + ' (dark) to ' + fmt(geometry.hi, 3) + ' (yellow); hatched cells are masked. ' +
      'Hover a cell for its numbers.';
  }

  $('heatmap').addEventListener('mousemove', (e) => {
    if (!geometry) return;
    const c = cellAt($('heatmap'), geometry, e);
    if (!c) return hideTooltip();
    showTooltip(e, cellText(kind(), block(state.kind, state.layer), headIndex(state.head), c.i, c.j));
  });
  $('heatmap').addEventListener('mouseleave', hideTooltip);

  function renderOverview() {
    const k = kind();
    $('overview-heading').textContent = k.title + ': every layer × head (click one to open it)';
    const grid = $('overview-grid');
    grid.innerHTML = '';
    const heads = data.heads.concat([-1]);
    grid.style.gridTemplateColumns = 'repeat(' + heads.length + ', max-content)';
    const cell = Math.max(2, Math.min(14, Math.floor(140 / Math.max(k.q_len, k.k_len))));
    for (const layer of k.layers) {
      const b = block(k.name, layer);
      for (const h of heads) {
        const box = document.createElement('div');
        box.className = 'thumb' + (layer === state.layer && h === state.head ? ' selected' : '');
        const canvas = document.createElement('canvas');
        const off = headIndex(h) * b.q * b.k;
        drawThumb(canvas, b, off, cell);
        box.appendChild(canvas);
        const label = document.createElement('div');
        label.textContent = 'L' + (layer + 1) + ' · ' + (h < 0 ? 'mean' : 'H' + (h + 1));
        box.appendChild(label);
        box.title = 'layer ' + (layer + 1) + ', ' + headName(h);
        box.addEventListener('click', () => {
          state.layer = layer;
          state.head = h;
          state.view = 'attention';
          render();
        });
        grid.appendChild(box);
      }
    }
  }

  function drawThumb(canvas, b, off, cell) {
    const ratio = window.devicePixelRatio || 1;
    canvas.width = b.k * cell * ratio;
    canvas.height = b.q * cell * ratio;
    canvas.style.width = b.k * cell + 'px';
    canvas.style.height = b.q * cell + 'px';
    const ctx = canvas.getContext('2d');
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    let hi = 0;
    for (let i = 0; i < b.q * b.k; ++i) hi = Math.max(hi, b.probs[off + i]);
    for (let i = 0; i < b.q; ++i)
      for (let j = 0; j < b.k; ++j) {
        ctx.fillStyle = b.mask[i * b.k + j] ? MASKED_FILL : colour(b.probs[off + i * b.k + j] / (hi || 1));
        ctx.fillRect(j * cell, i * cell, cell, cell);
      }
  }

  let maskGeometry = null;
  function renderMasks() {
    const k = kind(), b = block(k.name, state.layer);
    $('masks-heading').textContent = 'The mask of ' + k.title.toLowerCase() + ' (layer ' + (state.layer + 1) + ')';
    const on = (x) => (x ? 'on' : '<b>off</b>');
    $('masks-text').innerHTML = 'Here ' + k.mask_text + '. Switches when this lesson was made: source padding mask ' +
      on(data.masks.src_padding) + ', target padding mask ' + on(data.masks.tgt_padding) +
      ', look-ahead mask ' + on(data.masks.subsequent) + '. Hatched cells are masked: their score is replaced by ' +
      escapeHtml(data.model.mask_fill) + ' before softmax, so their probability is exactly 0.';
    maskGeometry = drawHeatmap($('mask-canvas'), {
      rows: b.q, cols: b.k,
      rowLabels: tokensOf(k.query_side), colLabels: tokensOf(k.key_side),
      value: () => 1, min: 0, max: 1,
      masked: (i, j) => b.mask[i * b.k + j] !== 0,
      allowedFill: '#ffffff',
    });
  }
  $('mask-canvas').addEventListener('mousemove', (e) => {
    if (!maskGeometry) return;
    const c = cellAt($('mask-canvas'), maskGeometry, e);
    if (!c) return hideTooltip();
    const k = kind(), b = block(k.name, state.layer);
    showTooltip(e, 'query ' + (c.i + 1) + ' “' + escapeHtml(tokensOf(k.query_side)[c.i]) + '” → key ' + (c.j + 1) +
      ' “' + escapeHtml(tokensOf(k.key_side)[c.j]) + '”: ' + (b.mask[c.i * b.k + c.j] ? '<b>masked</b>' : 'visible'));
  });
  $('mask-canvas').addEventListener('mouseleave', hideTooltip);

  // The decoding view: the kind whose new rows are drawn (cross-attention where the lesson has it).
  function stepKind() {
    if (state.kind !== 'enc_self') return kind();
    return kindByName.cross || kindByName.dec_self || null;
  }

  let rowsGeometry = null, rowsList = [];
  function renderDecoding() {
    const steps = data.steps, s = steps[state.step];
    const slider = $('step');
    slider.max = String(steps.length - 1);
    slider.value = String(state.step);
    $('step-label').textContent = 'step ' + (state.step + 1) + ' of ' + steps.length + (s.forced ? ' (forced by the prefix)' : '');
    const out = $('step-output');
    out.innerHTML = '';
    const line = document.createElement('div');
    data.target.forEach((t, i) => {
      if (i > state.step) return;
      const span = document.createElement('span');
      span.textContent = t + ' ';
      if (i === state.step) span.className = 'now';
      else if (i < data.prefix_length) span.className = 'forced';
      line.appendChild(span);
    });
    if (s.chosen) {
      const next = document.createElement('b');
      next.textContent = '→ ' + s.chosen;
      line.appendChild(next);
    }
    out.appendChild(document.createTextNode('Fed so far (the newest position highlighted is the query), and the token chosen next:'));
    out.appendChild(line);
    const topk = $('top-k');
    topk.innerHTML = '';
    const best = s.next.length ? s.next[0].p : 1;
    for (const n of s.next) {
      const row = document.createElement('div');
      row.className = 'bar-row' + (n.token === s.chosen ? ' chosen' : '');
      const name = document.createElement('span');
      name.className = 'name';
      name.textContent = n.token;
      const bar = document.createElement('span');
      bar.className = 'bar';
      bar.style.width = Math.max(2, Math.round(220 * n.p / (best || 1))) + 'px';
      const value = document.createElement('span');
      value.className = 'value';
      value.textContent = fmtSmall(n.p);
      row.append(name, bar, value);
      topk.appendChild(row);
    }
    const after = document.createElement('div');
    after.textContent = s.chosen ? 'Chosen next: “' + s.chosen + '”' : 'Decoding ends here.';
    topk.appendChild(after);
    const k = stepKind();
    if (!k) return;
    $('rows-heading').textContent = 'The new row of ' + k.title.toLowerCase() + ' at this step: query “' +
      s.fed + '”, every layer and head';
    rowsList = [];
    for (const layer of k.layers) for (const h of data.heads.concat([-1])) rowsList.push({ layer, h });
    const keys = tokensOf(k.key_side);
    rowsGeometry = drawHeatmap($('step-rows'), {
      rows: rowsList.length, cols: k.k_len, cell: Math.max(12, Math.min(28, Math.floor(560 / k.k_len))),
      rowLabels: rowsList.map((r) => 'L' + (r.layer + 1) + ' ' + (r.h < 0 ? 'mean' : 'H' + (r.h + 1))),
      colLabels: keys,
      value: (r, j) => {
        const b = block(k.name, rowsList[r].layer);
        return b.probs[(headIndex(rowsList[r].h) * b.q + state.step) * b.k + j];
      },
      masked: (r, j) => block(k.name, rowsList[r].layer).mask[state.step * k.k_len + j] !== 0,
      min: 0, max: 1,
    });
  }
  $('step-rows').addEventListener('mousemove', (e) => {
    if (!rowsGeometry) return;
    const c = cellAt($('step-rows'), rowsGeometry, e), k = stepKind();
    if (!c || !k) return hideTooltip();
    const r = rowsList[c.i];
    showTooltip(e, '<div>layer ' + (r.layer + 1) + ', ' + headName(r.h) + '</div>' +
      cellText(k, block(k.name, r.layer), headIndex(r.h), state.step, c.j));
  });
  $('step-rows').addEventListener('mouseleave', hideTooltip);
  function setStep(i) {
    state.step = Math.max(0, Math.min(data.steps.length - 1, i));
    render();
  }
  $('step').addEventListener('input', (e) => setStep(Number(e.target.value)));
  $('step-back').addEventListener('click', () => setStep(state.step - 1));
  $('step-forward').addEventListener('click', () => setStep(state.step + 1));
  document.addEventListener('keydown', (e) => {
    // The slider and the menus take their own arrow keys.
    if (state.view !== 'decoding' || e.target.tagName === 'SELECT' || e.target.tagName === 'INPUT') return;
    if (e.key === 'ArrowRight') setStep(state.step + 1);
    if (e.key === 'ArrowLeft') setStep(state.step - 1);
  });

  const viewTexts = {
    overview: '<p style="margin:0">Every head of every layer of one kind of attention as a thumbnail ' +
      '(the mean of the heads last in each row): the same heatmap as the Attention view, small, coloured ' +
      'from 0 to its own largest probability; grey cells are masked. Click one to open it.</p>',
    masks: '<p style="margin:0">The mask that was applied before softmax: a masked cell\'s score is replaced ' +
      'by the fill value, so after softmax its probability is exactly 0. Padding masks hide padding keys; ' +
      'the look-ahead mask hides the keys to the right of each query in decoder self-attention.</p>',
    decoding: '<p style="margin:0">The decoder produces one token per step. At each step the newest ' +
      'position is fed as a query, attends to the keys, and the output layer gives the probability of ' +
      'every next token (the top choices are listed; greedy decoding takes the most probable). The new ' +
      'row is the same as that row of the full heatmap: decoding with a key/value cache computes exactly ' +
      'it. Use the slider, the buttons or ← →.</p>',
  };

  function render() {
    clampState();
    updateControls();
    hideTooltip();
    const k = kind();
    $('explanation-text').innerHTML = (viewTexts[state.view] || '') +
      (state.view === 'decoding' ? '' : k.explanation);
    if (state.view === 'attention') renderAttention();
    else if (state.view === 'overview') renderOverview();
    else if (state.view === 'masks') renderMasks();
    else if (state.view === 'decoding') renderDecoding();
    document.body.dataset.ready = 'true';
  }

  // ---- the page's header ----

  function header() {
    const s = $('sentence');
    const add = (text, cls) => {
      const span = document.createElement('span');
      span.textContent = text;
      if (cls) span.className = cls;
      s.appendChild(span);
    };
    if (data.source.length) add(data.source.join(' '));
    if (data.source.length && data.target.length) add('→', 'arrow');
    if (data.target.length) add(data.target.join(' '));
    const m = data.model;
    $('model-line').textContent = 'Model: ' + m.name + ' (' + m.family + ', ' + m.architecture + ', d_model ' +
      m.d_model + ', ' + m.heads + ' heads of d_k ' + m.d_k + ')';
    $('footer').textContent = 'Made with attnviz. Probabilities are stored with ' + data.precision.bits +
      ' bits (within ±' + data.precision.max_error.toPrecision(2) + '), raw scores as ' + data.precision.scores +
      '. Heads in this lesson: ' + data.heads.map((h) => h + 1).join(', ') + ' of ' + data.heads_total + '.';
  }

  // For scripts driving the page (the project's browser test): the state, and where a cell of the
  // attention heatmap or of the decoding view's new rows is on the screen (client pixels).
  function centerOf(canvasId, g, i, j) {
    const r = $(canvasId).getBoundingClientRect();
    return { x: r.left + g.left + (j + 0.5) * g.cell, y: r.top + g.top + (i + 0.5) * g.cell };
  }
  window.attnvizLesson = {
    state,
    cellCenter: (i, j) => centerOf('heatmap', geometry, i, j),
    rowCellCenter: (r, j) => centerOf('step-rows', rowsGeometry, r, j),
  };

  header();
  render();
})();
