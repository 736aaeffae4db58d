"""Write, for each tutorial people train today, a small random-weight model saved the way that
tutorial's training script saves it, and PyTorch's reference tensors for it: for
tests/test_tutorials.cpp, which opens each file with at most what the file cannot say and compares
every attention tensor and the logits.

For every case this writes the model's file (or Hugging Face folder) under DIR/CASE/, the reference
DIR/CASE.ref.safetensors (tools/tutorial_models.py's trace, __metadata__["inputs"] with the batch and
a greedy decode where the test checks one) and a line of DIR/cases.json:
{"case", "path", "how", "family", "supplied": {...}, "asks": [...], "needs": [...]} -- "asks" what
attnviz must ask without "supplied", "needs" the model parts the forward pass must have beyond
LayerNorm with bias, GELU/ReLU and learned or sinusoidal positions (for the report of which pass).

usage: /usr/bin/python3 tools/make_tutorial_checkpoints.py --out DIR
       /usr/bin/python3 tools/make_tutorial_checkpoints.py --out DIR --bench gpt2-small|smollm-135m
         (only a benchmark shape's Hugging Face folder, DIR/NAME, random weights: BENCH_SIZES)
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_decoder_models as hf  # noqa: E402
import stio  # noqa: E402
import tutorial_models as tm  # noqa: E402

torch.set_num_threads(1)


def _adamw_state(model):
    """An AdamW state_dict after one step (exp_avg, exp_avg_sq, step; betas tuples, None, bools in
    param_groups), without changing the weights (lr 0)."""
    opt = torch.optim.AdamW(model.parameters(), lr=0.0)
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    opt.step()
    return opt.state_dict()


def _write_ref(out, case, tensors, inputs, model):
    """The reference tensors and their inputs, with PyTorch's count of the model's parameters (a
    tied table once)."""
    inputs = dict(inputs, parameters=sum(p.numel() for p in model.parameters()))
    stio.write(os.path.join(out, case + ".ref.safetensors"), tensors,
               {"inputs": json.dumps(inputs)})


def nanogpt(out, case, bias, compiled):
    """train.py's out/ckpt.pt: {"model", "optimizer", "model_args", "iter_num", "best_val_loss",
    "config"}; under torch.compile (compile=True, the default) every key has "_orig_mod."."""
    args = dict(n_layer=2, n_head=4, n_embd=32, block_size=16, bias=bias, vocab_size=37, dropout=0.0)
    model = tm.init_peaked_(tm.NanoGPT(args["block_size"], args["vocab_size"], args["n_layer"],
                                       args["n_head"], args["n_embd"], bias=bias), 11)
    sd = model.state_dict()
    if compiled:
        sd = {"_orig_mod." + k: v for k, v in sd.items()}
    config = {"out_dir": "out", "eval_interval": 250, "init_from": "scratch", "dataset": "shakespeare_char",
              "batch_size": 64, "block_size": 16, "n_layer": 2, "n_head": 4, "n_embd": 32, "dropout": 0.0,
              "bias": bias, "learning_rate": 1e-3, "decay_lr": True, "backend": "nccl", "device": "cpu",
              "dtype": "float32", "compile": compiled}
    ckpt = {"model": sd, "optimizer": _adamw_state(model), "model_args": args, "iter_num": 250,
            "best_val_loss": torch.tensor(1.4692), "config": config}
    os.makedirs(os.path.join(out, case, "out"), exist_ok=True)
    torch.save(ckpt, os.path.join(out, case, "out", "ckpt.pt"))
    ids = [[5, 9, 1, 30, 22, 7, 3, 18], [36, 2, 11, 4, 27, 14, 8, 20]]
    prompt = [5, 9, 1]
    _write_ref(out, case, model.trace(ids),
               {"tgt_ids": ids, "greedy": {"tgt_ids": prompt, "max_len": 6, "out_ids": model.greedy(prompt, 6)}}, model)
    return os.path.join(case, "out", "ckpt.pt")


def mingpt(out, case):
    """projects/chargpt: torch.save(model.state_dict(), work_dir/model.pt)."""
    model = tm.init_peaked_(tm.NanoGPT(16, 41, 2, 4, 32, bias=True, tanh_gelu=True, tied=False), 12)
    os.makedirs(os.path.join(out, case), exist_ok=True)
    torch.save(model.state_dict(), os.path.join(out, case, "model.pt"))
    ids = [[3, 40, 12, 7, 25, 1, 33], [9, 9, 14, 2, 38, 21, 6]]
    _write_ref(out, case, model.trace(ids), {"tgt_ids": ids}, model)
    return os.path.join(case, "model.pt")


def ngvideo(out, case):
    """gpt.py saves nothing; its users add torch.save(model.state_dict(), ...)."""
    model = tm.init_peaked_(tm.NgVideoGPT(vocab_size=40, n_embd=32, n_head=4, n_layer=2, block_size=16), 13)
    os.makedirs(os.path.join(out, case), exist_ok=True)
    torch.save(model.state_dict(), os.path.join(out, case, "model.pt"))
    ids = [[1, 20, 33, 4, 17, 9, 28], [0, 5, 39, 12, 12, 30, 2]]
    _write_ref(out, case, model.trace(ids), {"tgt_ids": ids}, model)
    return os.path.join(case, "model.pt")


def annotated(out, case):
    """train_worker: torch.save(module.state_dict(), "multi30k_model_final.pt"); specials <s> 0,
    </s> 1, <blank> 2 (padding)."""
    model = tm.init_peaked_(tm.AnnotatedTransformer(30, 28, N=2, d_model=32, d_ff=64, h=4, pad=2), 14)
    os.makedirs(os.path.join(out, case), exist_ok=True)
    torch.save(model.state_dict(), os.path.join(out, case, "multi30k_model_final.pt"))
    src = [[0, 7, 19, 4, 23, 11, 1], [0, 5, 8, 27, 1, 2, 2]]
    tgt = [[0, 9, 14, 3, 22, 6], [0, 25, 10, 16, 2, 2]]
    greedy = model.greedy(src[0], 8, 0, 1)
    _write_ref(out, case, model.trace(src, tgt),
               {"src_ids": src, "tgt_ids": tgt,
                "greedy": {"src_ids": src[0], "max_len": 7, "out_ids": greedy}}, model)
    return os.path.join(case, "multi30k_model_final.pt")


def raschka(out, case, qkv_bias, with_optimizer):
    """ch05: torch.save(model.state_dict(), "model.pth"), or {"model_state_dict", "optimizer_state_dict"}
    as model_and_optimizer.pth."""
    cfg = {"vocab_size": 50, "context_length": 16, "emb_dim": 32, "n_heads": 4, "n_layers": 2,
           "drop_rate": 0.0, "qkv_bias": qkv_bias}
    model = tm.init_peaked_(tm.RaschkaGPT(cfg), 15)
    os.makedirs(os.path.join(out, case), exist_ok=True)
    if with_optimizer:
        name = "model_and_optimizer.pth"
        torch.save({"model_state_dict": model.state_dict(), "optimizer_state_dict": _adamw_state(model)},
                   os.path.join(out, case, name))
    else:
        name = "model.pth"
        torch.save(model.state_dict(), os.path.join(out, case, name))
    ids = [[6, 44, 12, 31, 2, 19, 40, 8], [17, 3, 3, 28, 49, 10, 22, 35]]
    _write_ref(out, case, model.trace(ids), {"tgt_ids": ids}, model)
    return os.path.join(case, name)


def llama2c(out, case):
    """train.py's out/ckpt.pt with model_args (dim, n_layers, n_heads, n_kv_heads, vocab_size,
    multiple_of, max_seq_len, dropout), "_orig_mod." under torch.compile."""
    args = dict(dim=32, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=48, multiple_of=16,
                max_seq_len=32, dropout=0.0)
    model = tm.init_peaked_(tm.Llama2c(args), 16)
    sd = {"_orig_mod." + k: v for k, v in model.state_dict().items()}
    config = {"out_dir": "out", "batch_size": 8, "max_seq_len": 32, "vocab_source": "custom", "vocab_size": 48,
              "dim": 32, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2, "multiple_of": 16, "dropout": 0.0,
              "learning_rate": 5e-4, "dtype": "float32", "compile": True}
    ckpt = {"model": sd, "optimizer": _adamw_state(model), "model_args": args, "iter_num": 2000,
            "best_val_loss": torch.tensor(2.31), "config": config}
    os.makedirs(os.path.join(out, case, "out"), exist_ok=True)
    torch.save(ckpt, os.path.join(out, case, "out", "ckpt.pt"))
    ids = [[1, 40, 7, 22, 13, 30, 5, 9, 44], [1, 3, 18, 18, 27, 2, 35, 11, 6]]
    _write_ref(out, case, model.trace(ids), {"tgt_ids": ids}, model)
    return os.path.join(case, "out", "ckpt.pt")


def _write_shards(folder, state, count):
    """save_pretrained with a max_shard_size: model-0000i-of-0000n.safetensors, each a run of the
    state_dict's tensors in order, and model.safetensors.index.json naming each tensor's file."""
    names = list(state)
    per = -(-len(names) // count)
    weight_map, total = {}, 0
    for i in range(count):
        file = "model-%05d-of-%05d.safetensors" % (i + 1, count)
        part = {k: state[k] for k in names[i * per:(i + 1) * per]}
        stio.write(os.path.join(folder, file), part, {"format": "pt"})
        weight_map.update({k: file for k in part})
        total += sum(v.numel() * v.element_size() for v in part.values())
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2,
                  sort_keys=True)


def _hf_folder(out, case, model, config, state, weights, vocab_file, vocab, shards=1):
    folder = os.path.join(out, case)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
    if shards > 1:
        _write_shards(folder, state, shards)
    elif weights == "model.safetensors":
        stio.write(os.path.join(folder, weights), state, {"format": "pt"})
    else:
        torch.save(state, os.path.join(folder, weights))
    with open(os.path.join(folder, vocab_file), "w", encoding="utf-8") as f:
        if vocab_file.endswith(".json"):
            json.dump({t: i for i, t in enumerate(vocab)}, f, ensure_ascii=False)
        else:
            f.write("".join(t + "\n" for t in vocab))
    return case


GPT2_TEST = {"vocab_size": 45, "n_positions": 32, "n_embd": 32, "n_layer": 2, "n_head": 4,
             "layer_norm_epsilon": 1e-5}
LLAMA_TEST = {"vocab_size": 46, "hidden_size": 32, "intermediate_size": 80, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-5,
              "rope_theta": 100000.0, "max_position_embeddings": 64, "tie_word_embeddings": True}
# Qwen2's own shape traits: heads 12 wide (head_dim, not hidden / heads), q/k/v biases, an untied
# lm_head, rotary base 1e6.
QWEN2_TEST = {"vocab_size": 46, "hidden_size": 32, "intermediate_size": 72, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12,
              "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "max_position_embeddings": 64,
              "tie_word_embeddings": False}
# Bigger shapes for the benchmarks (tools/bench_torch.py --model, tools/bench_cpu.py --model):
# written by the same writers, with random weights and no reference tensors.
BENCH_SIZES = {
    # GPT-2 small: 12 layers, d 768, 12 heads, 1024 positions, 50,257 tokens.
    "gpt2-small": ("hf_gpt2", {"vocab_size": 50257, "n_positions": 1024, "n_embd": 768,
                               "n_layer": 12, "n_head": 12, "layer_norm_epsilon": 1e-5}),
    # SmolLM2-135M's config.json (LlamaForCausalLM): 30 layers, d 576, 9 heads, 3 kv heads, SwiGLU
    # 1536, RMSNorm, rotary base 100000, 49,152 tokens, tied; 2048 positions.
    "smollm-135m": ("hf_llama", {"vocab_size": 49152, "hidden_size": 576, "intermediate_size": 1536,
                                 "num_hidden_layers": 30, "num_attention_heads": 9,
                                 "num_key_value_heads": 3, "rms_norm_eps": 1e-5, "rope_theta": 100000.0,
                                 "max_position_embeddings": 2048, "tie_word_embeddings": True}),
    # Llama-3.2-1B's shape (LlamaForCausalLM): 16 layers, d 2048, 32 heads, 8 kv heads, SwiGLU
    # 8192, rotary base 500000, 128,256 tokens, tied; its llama3 rotary scaling left out (random
    # weights: the shape is what a memory benchmark measures). 1.24 B parameters, 4.9 GB.
    "llama-3.2-1b": ("hf_llama", {"vocab_size": 128256, "hidden_size": 2048,
                                  "intermediate_size": 8192, "num_hidden_layers": 16,
                                  "num_attention_heads": 32, "num_key_value_heads": 8,
                                  "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
                                  "max_position_embeddings": 2048, "tie_word_embeddings": True}),
}


def hf_gpt2_model(c=GPT2_TEST):
    return tm.init_peaked_(hf.Gpt2(c), 17)


def hf_llama_model(c=LLAMA_TEST):
    return tm.init_peaked_(hf.Llama(c), 19)


def hf_gpt2(out, case, c=GPT2_TEST, reference=True):
    """save_pretrained: config.json, model.safetensors (one copy of the tied table, no lm_head, no mask
    buffers), vocab.json."""
    model = hf_gpt2_model(c)
    state = {k: v for k, v in model.state_dict().items() if k != "lm_head.weight"}
    vocab = ["t%d" % i for i in range(c["vocab_size"] - 1)] + ["<|endoftext|>"]
    if reference:
        ids = [[12, 3, 40, 7, 21, 30, 2], [44, 8, 8, 15, 36, 1, 27]]
        _write_ref(out, case, model.trace(ids), {"tgt_ids": ids}, model)
    return _hf_folder(out, case, model, model.config(), state, "model.safetensors", "vocab.json", vocab)


def hf_bert(out, case):
    """An older save_pretrained: pytorch_model.bin with the position_ids buffer, vocab.txt."""
    c = {"vocab_size": 42, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
         "intermediate_size": 64, "max_position_embeddings": 24, "type_vocab_size": 2,
         "layer_norm_eps": 1e-12, "pad_token_id": 0}
    model = tm.init_peaked_(hf.Bert(c), 18)
    state = dict(model.state_dict())
    state["bert.embeddings.position_ids"] = torch.arange(24).unsqueeze(0)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + ["w%d" % i for i in range(37)]
    ids = [[2, 9, 4, 17, 30, 3, 0, 0], [2, 11, 25, 6, 3, 40, 12, 3]]
    seg = [[0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1, 1, 1]]
    _write_ref(out, case, model.trace(ids, seg), {"src_ids": ids, "segment_ids": seg}, model)
    return _hf_folder(out, case, model, model.config(), state, "pytorch_model.bin", "vocab.txt", vocab)


def hf_roberta(out, case):
    """save_pretrained of a RobertaForMaskedLM: model.safetensors without the tied decoder, pad
    tokens at the end of one row and inside the other (positions counted around them)."""
    c = {"vocab_size": 42, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
         "intermediate_size": 64, "max_position_embeddings": 26, "type_vocab_size": 1,
         "layer_norm_eps": 1e-5, "pad_token_id": 1}
    model = tm.init_peaked_(hf.Roberta(c), 85)
    state = {k: v for k, v in model.state_dict().items() if k != "lm_head.decoder.weight"}
    vocab = ["<s>", "<pad>", "</s>", "<unk>"] + ["w%d" % i for i in range(37)] + ["<mask>"]
    ids = [[0, 9, 41, 17, 30, 2, 1, 1], [0, 11, 1, 6, 2, 40, 12, 2]]
    _write_ref(out, case, model.trace(ids), {"src_ids": ids}, model)
    return _hf_folder(out, case, model, model.config(), state, "model.safetensors", "vocab.json", vocab)


def hf_distilbert(out, case):
    """save_pretrained of a DistilBertForMaskedLM: model.safetensors without the tied projector,
    vocab.txt; one row padded."""
    c = {"vocab_size": 42, "dim": 32, "n_layers": 2, "n_heads": 4, "hidden_dim": 64,
         "max_position_embeddings": 24, "pad_token_id": 0}
    model = tm.init_peaked_(hf.DistilBert(c), 67)
    state = {k: v for k, v in model.state_dict().items() if k != "vocab_projector.weight"}
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + ["w%d" % i for i in range(37)]
    ids = [[2, 9, 4, 17, 30, 3, 0, 0], [2, 11, 25, 6, 3, 40, 12, 3]]
    _write_ref(out, case, model.trace(ids), {"src_ids": ids}, model)
    return _hf_folder(out, case, model, model.config(), state, "model.safetensors", "vocab.txt", vocab)


def hf_llama(out, case, c=LLAMA_TEST, reference=True):
    """save_pretrained of a tied Llama-family model (SmolLM-like): no lm_head in model.safetensors."""
    model = hf_llama_model(c)
    state = {k: v for k, v in model.state_dict().items() if k != "lm_head.weight"}
    vocab = ["<unk>", "<s>", "</s>"] + ["p%d" % i for i in range(c["vocab_size"] - 3)]
    if reference:
        ids = [[1, 22, 7, 40, 13, 3, 31, 9, 18], [1, 5, 5, 28, 44, 19, 10, 2, 36]]
        _write_ref(out, case, model.trace(ids), {"tgt_ids": ids}, model)
    return _hf_folder(out, case, model, model.config(), state, "model.safetensors", "vocab.json", vocab)


def _hf_decoder_case(out, case, model_class, c, seed, prompt, ids=None, max_len=10, shards=1,
                     vocab=None, eos=None, tied_key="lm_head.weight"):
    """save_pretrained of a decoder-only model written after transformers (tied: no `tied_key`
    saved), with the reference trace of `ids` (two rows made from the seed unless given) and a
    greedy decode of `prompt` through attnviz's key/value cache, stopping at `eos` (the config's
    eos_token_id unless given)."""
    model = tm.init_peaked_(model_class(c), seed)
    tied = c.get("tie_word_embeddings", True)
    state = {k: v for k, v in model.state_dict().items() if not (tied and k == tied_key)}
    if vocab is None:
        vocab = ["<unk>", "<s>", "</s>"] + ["p%d" % i for i in range(c["vocab_size"] - 3)]
    if ids is None:
        ids = [[1] + [(7 * i + seed) % (c["vocab_size"] - 3) + 3 for i in range(8)],
               [1] + [(11 * i + 2 * seed) % (c["vocab_size"] - 3) + 3 for i in range(8)]]
    if eos is None:
        eos = model.config()["eos_token_id"]
    _write_ref(out, case, model.trace(ids),
               {"tgt_ids": ids, "greedy": {"tgt_ids": prompt, "max_len": max_len,
                                           "out_ids": model.greedy(prompt, max_len, eos)}}, model)
    return _hf_folder(out, case, model, model.config(), state, "model.safetensors", "vocab.json",
                      vocab, shards=shards)


def hf_qwen2(out, case):
    """An untied Qwen2ForCausalLM in two shards: lm_head.weight saved beside the table."""
    return _hf_decoder_case(out, case, hf.Qwen2, QWEN2_TEST, 23, [1, 30, 7],
                            ids=[[1, 30, 7, 7, 13, 42, 31, 2, 18], [1, 9, 25, 28, 4, 19, 10, 37, 36]],
                            max_len=12, shards=2)


def hf_qwen3(out, case):
    """A tied Qwen3ForCausalLM (Qwen3-0.6B is tied): q_norm and k_norm per layer, heads 16 wide; the
    greedy decode normalises each new key as the prompt's."""
    return _hf_decoder_case(out, case, hf.Qwen3, dict(QWEN2_TEST, head_dim=16, tie_word_embeddings=True),
                            29, [1, 12, 40, 7],
                            ids=[[1, 12, 40, 7, 7, 33, 21, 2, 5], [1, 44, 3, 26, 26, 15, 9, 38, 30]],
                            max_len=12)


def hf_mistral(out, case):
    return _hf_decoder_case(out, case, hf.Mistral, dict(LLAMA_TEST, tie_word_embeddings=False), 31,
                            [1, 17, 4])


def hf_gemma(out, case):
    # Gemma's norms start at 0 (1 + weight): init_peaked_ puts them around 1, so 1 + w ≈ 2.
    return _hf_decoder_case(out, case, hf.Gemma, dict(QWEN2_TEST, head_dim=16, tie_word_embeddings=True),
                            37, [1, 9, 30])


# Phi-3's own traits: grouped-query heads in the fused qkv_proj, rotary on 6 of each head's 8
# dimensions (partial_rotary_factor as Phi-4-mini's), an untied lm_head, a sliding window that holds
# every test input (longer inputs are refused, not run as causal attention).
PHI3_TEST = dict(LLAMA_TEST, rope_theta=10000.0, partial_rotary_factor=0.75, sliding_window=16,
                 tie_word_embeddings=False)


def hf_phi3(out, case):
    return _hf_decoder_case(out, case, hf.Phi3, PHI3_TEST, 41, [1, 26, 8])


# Gemma 2's own traits: heads 16 wide scaled by query_pre_attn_scalar 24 (not head_dim), scores and
# logits soft-capped tightly enough that the caps matter (the peaked weights' scores reach tens),
# sliding and full layers alternating with a window that holds every test input.
GEMMA2_TEST = dict(QWEN2_TEST, head_dim=16, tie_word_embeddings=True, query_pre_attn_scalar=24,
                   attn_logit_softcapping=10.0, final_logit_softcapping=30.0, sliding_window=16,
                   layer_types=["sliding_attention", "full_attention"])


def hf_gemma2(out, case):
    return _hf_decoder_case(out, case, hf.Gemma2, GEMMA2_TEST, 43, [1, 33, 5])


# GPT-Neo as TinyStories-1M's config.json has it (global and local layers alternating), small: the
# window (16 keys) holds every test input, so local and global layers mask alike.
GPT_NEO_TEST = {"vocab_size": 47, "hidden_size": 32, "num_layers": 2, "num_heads": 4,
                "max_position_embeddings": 32, "window_size": 16,
                "attention_types": [[["global", "local"], 1]], "layer_norm_epsilon": 1e-5,
                "tie_word_embeddings": True}


def hf_gpt_neo(out, case):
    """save_pretrained of GPTNeoForCausalLM (tied: no lm_head.weight), vocab.json of GPT-2's kind."""
    c = GPT_NEO_TEST
    return _hf_decoder_case(out, case, hf.GptNeo, c, 41, [12, 3, 40],
                            ids=[[12, 3, 40, 7, 21, 30, 2, 9, 9], [44, 8, 8, 15, 36, 1, 27, 5, 33]],
                            vocab=["t%d" % i for i in range(c["vocab_size"] - 1)] + ["<|endoftext|>"],
                            eos=c["vocab_size"] - 1)


# GPT-NeoX as Pythia's config.json has it (parallel residual, a quarter of each head rotating, base
# 10000, untied embed_out), small: heads 16 wide, 4 of their dimensions rotating.
GPT_NEOX_TEST = {"vocab_size": 50, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                 "intermediate_size": 128, "rotary_pct": 0.25, "rotary_emb_base": 10000,
                 "max_position_embeddings": 64, "layer_norm_eps": 1e-5, "use_parallel_residual": True,
                 "tie_word_embeddings": False}


def _hf_neox(out, case, c, seed, ids, prompt):
    vocab = ["<|endoftext|>", "<|padding|>"] + ["n%d" % i for i in range(c["vocab_size"] - 2)]
    return _hf_decoder_case(out, case, hf.GptNeoX, c, seed, prompt, ids=ids, vocab=vocab, eos=0,
                            tied_key="embed_out.weight")


def hf_gpt_neox(out, case):
    """save_pretrained of GPTNeoXForCausalLM as Pythia's: the parallel residual, embed_out saved."""
    return _hf_neox(out, case, GPT_NEOX_TEST, 43,
                    [[7, 22, 13, 40, 3, 31, 9, 18, 25], [5, 5, 28, 44, 19, 10, 2, 36, 11]], [7, 22, 13])


def hf_gpt_neox_seq(out, case):
    """use_parallel_residual false (GPT-NeoX's sequential blocks), half of each head rotating, tied."""
    return _hf_neox(out, case, dict(GPT_NEOX_TEST, use_parallel_residual=False, rotary_pct=0.5,
                                    tie_word_embeddings=True), 47,
                    [[3, 9, 27, 41, 12, 12, 6, 33, 20], [48, 2, 15, 30, 8, 21, 39, 4, 17]], [3, 9, 27])


# OPT as opt-125m's config.json has it (pre-norm, ReLU, tied), small; and opt-350m's post-norm
# blocks (do_layer_norm_before false), without its project_in / project_out (refused by attnviz).
OPT_TEST = {"vocab_size": 52, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
            "ffn_dim": 64, "max_position_embeddings": 30, "do_layer_norm_before": True}


def _hf_opt(out, case, c, seed, ids, prompt):
    vocab = ["<s>", "<pad>", "</s>", "<unk>"] + ["o%d" % i for i in range(c["vocab_size"] - 4)]
    return _hf_decoder_case(out, case, hf.Opt, dict(c, tie_word_embeddings=True), seed, prompt,
                            ids=ids, vocab=vocab, eos=2)


def hf_opt(out, case):
    """save_pretrained of OPTForCausalLM (tied: no lm_head.weight); prompts begin with </s> (2), as
    OPT's tokenizer starts them."""
    return _hf_opt(out, case, OPT_TEST, 53,
                   [[2, 17, 40, 8, 23, 30, 5, 11, 49], [2, 9, 9, 36, 14, 27, 44, 6, 21]], [2, 17, 40])


def hf_opt_post(out, case):
    return _hf_opt(out, case, dict(OPT_TEST, do_layer_norm_before=False), 59,
                   [[2, 31, 4, 19, 19, 42, 7, 12, 28], [2, 5, 38, 22, 10, 47, 15, 33, 8]], [2, 31, 4])


def bench_model(name):
    """The PyTorch model of BENCH_SIZES[name], with the weights write_bench_model writes."""
    kind, c = BENCH_SIZES[name]
    return {"hf_gpt2": hf_gpt2_model, "hf_llama": hf_llama_model}[kind](c)


def write_bench_model(out, name):
    """Writes BENCH_SIZES[name] as a save_pretrained folder DIR/NAME; returns its path."""
    kind, c = BENCH_SIZES[name]
    os.makedirs(out, exist_ok=True)
    {"hf_gpt2": hf_gpt2, "hf_llama": hf_llama}[kind](out, name, c, reference=False)
    return os.path.join(out, name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--bench", choices=sorted(BENCH_SIZES),
                    help="write only this benchmark shape's folder, OUT/NAME (random weights)")
    args = ap.parse_args()
    if args.bench:
        print("wrote", write_bench_model(args.out, args.bench))
        return
    os.makedirs(args.out, exist_ok=True)
    cases = [
        # case, writer, how, family, supplied, asks, needs
        ("nanogpt", lambda o, c: nanogpt(o, c, bias=False, compiled=True),
         "out/ckpt.pt (train.py, compile=True, bias=False)", "nanogpt", {}, [], []),
        ("nanogpt_bias", lambda o, c: nanogpt(o, c, bias=True, compiled=False),
         "out/ckpt.pt (train.py, compile=False, bias=True)", "nanogpt", {}, [], []),
        ("mingpt", mingpt, "model.pt (chargpt's state_dict)", "mingpt", {"n_heads": 4}, ["n_heads"], []),
        ("ngvideo", ngvideo, "state_dict of gpt.py's model", "ng-video-lecture", {}, [], []),
        ("annotated", annotated, "multi30k_model_final.pt (train_worker's state_dict)",
         "annotated-transformer", {"n_heads": 4}, ["n_heads"], ["layernorm-std"]),
        ("raschka", lambda o, c: raschka(o, c, qkv_bias=False, with_optimizer=False),
         "model.pth (ch05's state_dict)", "llms-from-scratch", {"n_heads": 4}, ["n_heads"], []),
        ("raschka_opt", lambda o, c: raschka(o, c, qkv_bias=True, with_optimizer=True),
         "model_and_optimizer.pth (qkv_bias=True)", "llms-from-scratch", {"n_heads": 4}, ["n_heads"], []),
        ("llama2c", llama2c, "out/ckpt.pt (train.py, compile=True)", "llama2c", {}, [],
         ["rmsnorm", "rotary-interleaved", "grouped-query", "swiglu"]),
        ("hf_gpt2", hf_gpt2, "save_pretrained folder (model.safetensors)", "hf-gpt2", {}, [], []),
        ("hf_bert", hf_bert, "save_pretrained folder (pytorch_model.bin)", "hf-bert", {}, [], []),
        ("hf_roberta", hf_roberta, "save_pretrained folder (model.safetensors, tied)", "hf-roberta",
         {}, [], []),
        ("hf_distilbert", hf_distilbert, "save_pretrained folder (model.safetensors, tied)",
         "hf-distilbert", {}, [], []),
        ("hf_llama", hf_llama, "save_pretrained folder (model.safetensors, tied)", "hf-llama", {}, [],
         ["rmsnorm", "rotary-halves", "grouped-query", "swiglu"]),
        ("hf_mistral", hf_mistral, "save_pretrained folder (model.safetensors, untied)", "hf-mistral",
         {}, [], []),
        ("hf_gemma", hf_gemma, "save_pretrained folder (model.safetensors, tied)", "hf-gemma", {}, [], []),
        ("hf_gemma2", hf_gemma2, "save_pretrained folder (model.safetensors, tied)", "hf-gemma2", {},
         [], []),
        ("hf_phi3", hf_phi3, "save_pretrained folder (model.safetensors, untied)", "hf-phi3", {}, [],
         []),
        ("hf_qwen3", hf_qwen3, "save_pretrained folder (model.safetensors, tied)", "hf-qwen3", {}, [],
         []),
        ("hf_gpt_neo", hf_gpt_neo, "save_pretrained folder (model.safetensors, tied)", "hf-gpt-neo",
         {}, [], []),
        ("hf_gpt_neox", hf_gpt_neox, "save_pretrained folder (model.safetensors, untied)",
         "hf-gpt-neox", {}, [], []),
        ("hf_gpt_neox_seq", hf_gpt_neox_seq, "save_pretrained folder (model.safetensors, tied)",
         "hf-gpt-neox", {}, [], []),
        ("hf_opt", hf_opt, "save_pretrained folder (model.safetensors, tied)", "hf-opt", {}, [], []),
        ("hf_opt_post", hf_opt_post, "save_pretrained folder (do_layer_norm_before false)", "hf-opt",
         {}, [], []),
        ("hf_qwen2", hf_qwen2, "save_pretrained folder (2 shards, untied)", "hf-qwen2", {}, [],
         []),
    ]
    lines = []
    for case, write, how, family, supplied, asks, needs in cases:
        path = write(args.out, case)
        lines.append({"case": case, "path": path, "how": how, "family": family, "supplied": supplied,
                      "asks": asks, "needs": needs})
    with open(os.path.join(args.out, "cases.json"), "w") as f:
        json.dump(lines, f, indent=1)
    print("wrote %d tutorial checkpoints to %s" % (len(lines), args.out))


if __name__ == "__main__":
    main()
