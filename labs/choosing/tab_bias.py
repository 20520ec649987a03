"""Choosing a model, two panels: bias inherited from pre-training (B7) and domain shift."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from labs.choosing import bias, domains
from labs.core.models import models
from labs.core.ui import plots, ui
from labs.core.ui.build import Build

NO_MASKED = ("\n\n⚠️ No masked LM is available here: the masked form of the probe needs bert-base-uncased from the "
             "Hugging Face Hub (run `./lab download` once while online); the causal LM answers above.")


MASKED_NOTE = ("A masked LM reads both sides, so each token is masked in turn: the figure is its pseudo-perplexity, "
               "exp of the mean −ln P(token | every other token), and hover shows how often its top guess was the "
               "token. ")


def bias_figure(r: dict):
    rows = r["rows"]
    values = [row["log_ratio"] for row in rows]
    hover = [f"P(he) = {row['p_he']:.4f}, P(she) = {row['p_she']:.4f}, P(they) = {row['p_they']:.4f}" for row in rows]
    fig = plots.bar_chart([row["occupation"] for row in rows], values, hover=hover,
                          colors=[plots.BLUE if v > 0 else plots.RED for v in values],
                          title=plots.safe(f"{r['model']}: ln P(he) / P(she), most “he” first"),
                          x_title="ln P(he) − ln P(she)   (> 0: “he” more probable; < 0: “she”)")
    fig.add_vline(x=0, line_width=2)
    return fig


def bias_text(r: dict, loaded) -> str:
    he = sum(row["log_ratio"] > 0 for row in r["rows"])
    read = "reads the template up to the blank" if r["family"] == "causal" else "fills the [MASK]"
    return (f"The model {read}: for the first occupation it reads “{ui.md(r['read_as'])}”. "
            f"“he” is more probable for **{he}** of {len(r['rows'])} occupations, “she” for "
            f"**{len(r['rows']) - he}**.\n\n**What this shows, and what it does not.** {ui.md(r['what_it_shows'])}\n\n"
            + ui.model_badge(loaded) + ("" if models.choices("masked") else NO_MASKED))


def on_bias(model_name, template):
    loaded = models.load(model_name, *bias.FAMILIES)
    r = bias.probe(loaded, template).to_json()
    return bias_figure(r), bias_text(r, loaded), r


def domain_figure(r: dict):
    rows = list(r["domains"]) + ([{"domain": "your text", **r["yours"]}] if r["yours"] else [])
    return plots.bar_chart([x["domain"] for x in rows], [x["perplexity"] for x in rows],
                           colors=[plots.GREEN if x["domain"] == "your text" else plots.BLUE for x in rows],
                           title=plots.safe(f"{r['model']}: {r['metric']} per domain (lower = more at home)"),
                           x_title=r["metric"], hover=[f"{x['tokens']} tokens" + accuracy_words(x) for x in rows])


def accuracy_words(x: dict) -> str:
    return "" if x.get("accuracy") is None else f", top-1 accuracy {x['accuracy']:.0%}"


def on_domains(model_name, text):
    loaded = models.load(model_name, *domains.FAMILIES)
    r = domains.domain_shift(loaded, text).to_json()
    best, worst = min(r["domains"], key=lambda x: x["perplexity"]), max(r["domains"], key=lambda x: x["perplexity"])
    note = (f"Most at home: **{best['domain']}** ({best['perplexity']:,.1f}); least: **{worst['domain']}** "
            f"({worst['perplexity']:,.1f}). Each figure pools every token of the domain's texts; hover for the counts. "
            + (MASKED_NOTE if r["metric"] != "perplexity" else "") + ui.model_badge(loaded))
    return domain_figure(r), note, r


def build() -> SimpleNamespace:
    gr.Markdown("## 3. Bias inherited from pre-training (B7)")
    with gr.Row():
        model = ui.model_dropdown(*bias.FAMILIES, label="Masked or causal LM", family_order=True)
        template = gr.Textbox(bias.probe_set()[0][0], label="Template: {occupation} once, [MASK] where the pronoun goes",
                              max_length=bias.MAX_TEMPLATE_CHARS, scale=2)
    run = gr.Button("Probe", variant="primary")
    with gr.Row():
        plot, text = gr.Plot(label="Pronoun probabilities per occupation"), gr.Markdown()
    with gr.Accordion("The probe as JSON (as /bias_probe returns it)", open=False):
        box = gr.JSON()
    gr.Markdown("## 4. Domain shift: the same model on news, chat, law, medicine, code and social media")
    with gr.Row():
        dmodel = ui.model_dropdown(*domains.FAMILIES, label="Causal or masked LM", family_order=True)
        dtext = gr.Textbox(domains.EXAMPLE, label="Your text (optional)", max_length=2000, scale=2)
    drun = gr.Button("Measure perplexity per domain")
    with gr.Row():
        dplot, dnote = gr.Plot(label="Perplexity per domain"), gr.Markdown()
    with gr.Accordion("Per domain and per text (as /domain_shift returns it)", open=False):
        dbox = gr.JSON()
    gr.Markdown("A fine-tuned model meets domain shift too: [train a sentiment classifier on film reviews only]"
                "(?tab=finetune&data=films) in Fine-tune, and its result shows how much accuracy it loses on "
                "restaurants, products, travel and the rest, which it never saw.")
    return SimpleNamespace(model=model, template=template, run=run, plot=plot, text=text, box=box, dmodel=dmodel,
                           dtext=dtext, drun=drun, dplot=dplot, dnote=dnote, dbox=dbox)


def wire(ctx: Build, p: SimpleNamespace) -> None:
    probe = ([p.model, p.template], [p.plot, p.text, p.box])
    ui.wire([p.run.click, p.template.submit], on_bias, *probe)
    ctx.on_load(on_bias, *probe)
    shift = ([p.dmodel, p.dtext], [p.dplot, p.dnote, p.dbox])
    ui.wire([p.drun.click, p.dtext.submit], on_domains, *shift)
    ctx.on_load(on_domains, *shift)
