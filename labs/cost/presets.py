"""Every published figure the Cost & scale lab uses, each with a short source note (paper or datasheet
and year). Where a figure is not published exactly, its note says "approximate" and why.

Nothing here computes; compute.py, memory.py and scaling.py read these tables."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ModelPreset:
    """A published model: N parameters, D training tokens, and where each number comes from."""
    name: str
    params: float
    tokens: float
    source: str
    published: str = ""  # a measurement from the paper (FLOPs, hours, energy), when there is one


MODELS = {p.name: p for p in (
    ModelPreset("BERT-base", 110e6, 131e9,
                "Devlin et al. 2019: 110M parameters; 1M steps × 256 sequences × 512 tokens ≈ 131B tokens. "
                "An upper "
                "bound: 90 % of the steps used 128-token sequences, which gives ≈ 43B tokens.",
                "Strubell et al. 2019 (measured): 64 V100 GPUs for 79.2 h, 1,438 lbs (652 kg) CO₂e, "
                "cloud cost $3,751–12,571."),
    ModelPreset("BERT-large", 340e6, 131e9,
                "Devlin et al. 2019: 340M parameters; same schedule as BERT-base (≈ 131B tokens, an upper bound).",
                "Devlin et al. 2019: 4 days on 16 Cloud TPUs (64 TPU chips)."),
    ModelPreset("GPT-2 (1.5B)", 1.5e9, 10e9,
                "Radford et al. 2019: the largest GPT-2, 1.5B parameters (GPT-2 small is 124M). Tokens approximate: "
                "one pass over WebText's 40 GB at ≈ 4 bytes a token; OpenAI did not publish tokens or epochs."),
    ModelPreset("GPT-3 175B", 175e9, 300e9,
                "Brown et al. 2020: 175B parameters, 300B training tokens.",
                "Brown et al. 2020, table D.1: 3.14 × 10²³ FLOPs (3,640 petaflop/s-days). Patterson et al. 2021: "
                "1,287 MWh, 552 t CO₂e on V100s."),
    ModelPreset("T5-11B", 11e9, 2.0 ** 40,
                "Raffel et al. 2020: 11B parameters; the final T5 models: 1M steps × 2¹¹ sequences × 512 tokens = "
                "2⁴⁰ ≈ 1.1T tokens (the paper's baseline experiments used 2³⁵ ≈ 34B). 6·N·D is approximate "
                "for an "
                "encoder-decoder (each token passes through about half of the weights)."),
    ModelPreset("Chinchilla 70B", 70e9, 1.4e12,
                "Hoffmann et al. 2022: 70B parameters, 1.4T tokens.",
                "Hoffmann et al. 2022: the same compute as Gopher 280B, 5.76 × 10²³ FLOPs; their table 3: "
                "1B parameters → 20.2B tokens compute-optimal."),
    ModelPreset("LLaMA-2 7B", 7e9, 2e12,
                "Touvron et al. 2023: 7B parameters (6.7B exactly), 2T tokens.",
                "Touvron et al. 2023, table 2: 184,320 A100-80GB GPU-hours, 31.22 t CO₂e."),
    ModelPreset("SmolLM2-135M", 135e6, 2e12,
                "Allal et al. 2025 (SmolLM2): 135M parameters, 2T tokens. This lab's offline causal LM."),
)}
DEFAULT_MODEL = "BERT-base"


@dataclass(frozen=True)
class Device:
    """An accelerator's peak dense FLOP/s by precision (None: it has no such units), power and price."""
    name: str
    peak: dict  # precision -> FLOP/s
    watts: float
    price: float  # $ per device-hour
    source: str
    price_source: str
    notes: dict = field(default_factory=dict)


PRECISIONS = ("fp32", "fp16", "bf16", "mixed")
PRICE_NOTE = "approximate on-demand cloud list price, 2023–24; spot and smaller clouds are often cheaper"
DEVICES = {d.name: d for d in (
    Device("T4", {"fp32": 8.1e12, "fp16": 65e12, "bf16": None, "mixed": 65e12}, 70, 0.35,
           "NVIDIA T4 datasheet (2018): 65 TFLOP/s fp16 tensor, 8.1 fp32; 70 W. No bf16.",
           f"$0.35/h: {PRICE_NOTE}"),
    Device("V100", {"fp32": 15.7e12, "fp16": 125e12, "bf16": None, "mixed": 125e12}, 300, 2.48,
           "NVIDIA V100 SXM2 datasheet (2017): 125 TFLOP/s fp16 tensor, 15.7 fp32; 300 W. No bf16.",
           "$2.48/h: Google Cloud's on-demand V100 price that Strubell et al. 2019 used ($0.74 preemptible)"),
    Device("A100", {"fp32": 19.5e12, "fp16": 312e12, "bf16": 312e12, "mixed": 312e12}, 400, 3.00,
           "NVIDIA A100 SXM datasheet (2020): 312 TFLOP/s bf16/fp16 dense tensor, 19.5 fp32 (156 with TF32); 400 W.",
           f"$3.00/h: {PRICE_NOTE}"),
    Device("H100", {"fp32": 67e12, "fp16": 989e12, "bf16": 989e12, "mixed": 989e12}, 700, 4.00,
           "NVIDIA H100 SXM datasheet (2022): ≈ 989 TFLOP/s bf16 dense tensor (1,979 with sparsity), 67 fp32; 700 W.",
           f"$4.00/h: {PRICE_NOTE}"),
    Device("cpu-here", {"fp32": 0.1e12, "fp16": 0.1e12, "bf16": 0.1e12, "mixed": 0.1e12}, 65, 0.05,
           "This server: a nominal 0.1 TFLOP/s (a few laptop-class cores) until the training burst is measured; "
           "then the burst's achieved FLOP/s ÷ utilisation. 65 W: approximate, a desktop CPU's TDP. "
           "16-bit is no faster than fp32 on most CPUs.",
           "$0.05/h: approximate, a small cloud VM with 2 vCPUs"),
)}
DEFAULT_DEVICE = "A100"
DEVICE_CHOICES = tuple(DEVICES)

UTILISATION = 0.40  # model FLOPs utilisation: large runs report 30–55 % (e.g. Chowdhery et al. 2022, PaLM: 46 %)
UTILISATION_SOURCE = ("40 %: a typical model-FLOPs utilisation of a well-tuned large run (PaLM reported 46 %, "
                      "Chowdhery et al. 2022; many runs reach 20–40 %)")
PUE = 1.1
PUE_SOURCE = ("1.1: an efficient hyperscale datacenter (Google's fleet ≈ 1.1; Patterson et al. 2021 used 1.10 for "
              "GPT-3); the industry average is ≈ 1.55–1.6 (Uptime Institute surveys, approximate)")

# Grid carbon intensity, g CO₂e per kWh: approximate annual averages (Ember / EEA / IEA, 2022–23).
GRIDS = {
    "World average (≈ 480)": 480,
    "United States (≈ 390)": 390,
    "GPT-3's datacenter, Patterson et al. 2021 (429)": 429,
    "European Union (≈ 250)": 250,
    "Germany (≈ 380)": 380,
    "Poland (≈ 660)": 660,
    "India (≈ 710)": 710,
    "France (≈ 55)": 55,
    "Norway (≈ 30)": 30,
}
DEFAULT_GRID = "World average (≈ 480)"
GRID_SOURCE = ("approximate annual averages of electricity generation, 2022–23 (Ember, EEA, IEA); "
               "GPT-3's 429 g/kWh is Patterson et al. 2021's figure (552 t ÷ 1,287 MWh)")

# Everyday comparisons, in kg CO₂e: Strubell et al. 2019, table 1 (converted from lbs, 1 lb = 0.4536 kg).
COMPARISONS = (
    ("passenger flights New York ↔ San Francisco (round trip)", 1984 * 0.4536),
    ("years of an average human life", 11023 * 0.4536),
    ("car lifetimes, fuel included", 126000 * 0.4536),
)
COMPARISON_SOURCE = "Strubell et al. 2019, table 1: flight 1,984 lbs; human life, 1 year 11,023 lbs; car 126,000 lbs"

# Part B's carbon exercise, as the course states it.
GPT3_MWH, GPT3_TONNES, GPT3_COST = 1287.0, 552.0, 4.6e6
FINETUNE_MWH = 10.0
EXERCISE_SOURCE = ("1,287 MWh and 552 t CO₂e: Patterson et al. 2021. $4.6M: Lambda Labs 2020's estimate "
                   "(355 V100-years at 28 TFLOP/s and $1.50 per GPU-hour). 10 MWh for the fine-tune: the course's "
                   "assumption.")
LAMBDA_V100_FLOPS, LAMBDA_V100_PRICE = 28e12, 1.50  # Lambda Labs 2020, "OpenAI's GPT-3 language model"

STRUBELL_BERT = dict(gpus=64, hours=79.2, lbs=1438, cost_low=3751, cost_high=12571)
CHINCHILLA_1B = (1e9, 20.2e9)  # Hoffmann et al. 2022, table 3
TOKENS_PER_PARAM = 20  # Hoffmann et al. 2022: D ≈ 20 N at the compute-optimal point


@dataclass(frozen=True)
class Architecture:
    """A transformer's shape, for activations and LoRA's matrices (published configs)."""
    name: str
    layers: int
    hidden: int
    heads: int
    kv_dim: int  # the width of K and V (smaller than hidden with grouped-query attention)
    ffn: int
    gated: bool  # a SwiGLU MLP has three matrices (gate, up, down) instead of two
    source: str


ARCHITECTURES = {a.name: a for a in (
    Architecture("BERT-base", 12, 768, 12, 768, 3072, False, "Devlin et al. 2019"),
    Architecture("BERT-large", 24, 1024, 16, 1024, 4096, False, "Devlin et al. 2019"),
    Architecture("GPT-2 (1.5B)", 48, 1600, 25, 1600, 6400, False, "Radford et al. 2019"),
    Architecture("GPT-3 175B", 96, 12288, 96, 12288, 49152, False, "Brown et al. 2020, table 2.1"),
    Architecture("Chinchilla 70B", 80, 8192, 64, 8192, 32768, False, "Hoffmann et al. 2022, table 4"),
    Architecture("LLaMA-2 7B", 32, 4096, 32, 4096, 11008, True, "Touvron et al. 2023 (config.json)"),
    Architecture("SmolLM2-135M", 30, 576, 9, 192, 1536, True, "HuggingFaceTB config.json: 9 heads, 3 KV heads"),
    Architecture("all-MiniLM-L6-v2", 6, 384, 12, 384, 1536, False, "sentence-transformers config.json (22.7M "
                 "parameters); the model this server trains in the measured burst"),
)}
ARCHITECTURE_PARAMS = {"all-MiniLM-L6-v2": 22.7e6}  # models that are not training presets above
DEFAULT_ARCHITECTURE = "BERT-base"
LORA_TARGETS = ("query, value", "query, key, value, output", "all linear")
