"""A picture of a run: one self-contained HTML page (and a Chrome trace) from a run file.

Standard library only: it joins every lab folder with the engine, and each lab's ``view.py``
and ``infralab view`` call ``runview.cli.main``. The modules, one job each:

- ``model``: a run entry replayed step by step (batch, queue length, KV pages, preemptions,
  rejections, cancellations) and each request's lane;
- ``diff``: the first step where two runs (or a run and a public test's expected snapshot)
  differ, described in one sentence (English for the terminal, Chinese for the page);
- ``page``: the HTML page (data embedded as JSON, tables drawn a page of rows at a time);
- ``chrome``: the Chrome trace (Trace Event Format, opens in Perfetto);
- ``hint``: what a failing public test prints to show its run;
- ``cli``: the command line.
"""
