"""What the labs share, in four rooms (models/, work/, serving/, ui/) and errors.py; core imports no lab.

Each room says what goes in it:

- models/   which models are offered (registry: names, families, constants; offered: what this server
            offers), loading them with the head a lab asks for (models), the offline copies and downloads;
- work/     the work that leaves a click: the batched forward passes (lm, batching, padding) and the
            long jobs (jobs: a fine-tune run, a comparison, a curve);
- serving/  serving a class in Gradio: static files and the page compressed once, session patches,
            the grouped tab bar and what a page open computes;
- ui/       the look and the Gradio helpers: ui (wiring, friendly errors, API registration), theme,
            plots, links, the status line;
- errors.py the errors labs raise on purpose and the checks for typed input (used by every room).

A new pass goes into work/lm.py (or a lab registers its own); a new model family into models/registry.py;
a new serving trick into serving/; a new plot style into ui/plots.py."""
