"""One calibration: the grid measured, both models fitted, their held-out residuals, the report.

``run(real, grid, base)`` measures ``grid`` on the real device and fits the affine and the
context-aware model (``fit.MODELS``) to every shape; the context-aware fit is the profile it
hands out. ``document`` is what ``run_gpu.py --calibrate --output`` writes (``simulate.py
--device-profile`` reads its ``device``); ``render`` the text report with the per-step table.
``Calibration.from_document`` fits again from the steps a profile file recorded, so anyone can
check that the file's profile and residuals are what its measurements give.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import calibrate, fit

PROFILE_MODEL = "context"


@dataclass(frozen=True)
class Calibration:
    samples: list  # backend.Submission
    shapes: list[str]  # each sample's grid shape
    fits: dict  # model -> DeviceProfile fitted to every shape
    held: dict  # fit.held_out

    @property
    def profile(self):
        return self.fits[PROFILE_MODEL]

    @classmethod
    def from_document(cls, document: dict) -> Calibration:
        """The calibration a profile file records, fitted again from its measured steps."""
        from servesim import DeviceProfile

        cal = document["calibration"]
        base = DeviceProfile.from_json(document["device"], source="profile")
        steps = cal["steps"]
        samples = [fit.Sample(fit.terms_from_json(r), r["measuredMs"]) for r in steps]
        shapes = [r["shape"] for r in steps]
        held = cal["heldOut"]
        return _fitted(samples, shapes, base, held["folds"], held["seed"])

    def summary(self) -> dict:
        grid_fit = {
            model: fit.error_summary(fit.residuals(profile, self.samples))
            for model, profile in self.fits.items()
        }
        return {"gridFit": grid_fit, "heldOut": self.held["errors"]}

    def document(self, real, grid, lesson_entries=()) -> dict:
        """The profile file: ``device`` (the context-aware fit) and how it was obtained."""
        rows = [
            row | {f"{m}FitMs": fit.predicted_ms(p, sample.terms) for m, p in self.fits.items()}
            for row, sample in zip(self.held["rows"], self.samples, strict=True)
        ]
        return {
            "device": self.profile.to_json(),
            "calibration": {
                "realDevice": real.describe(),
                "grid": grid.to_json(),
                "fits": {model: coefficients(profile) for model, profile in self.fits.items()},
                "heldOut": {k: v for k, v in self.held.items() if k != "rows"},
                "summary": self.summary(),
                "steps": rows,
                "lessonTraces": list(lesson_entries),
            },
        }

    def render(self, desc: dict, per_step: bool = True) -> str:
        """The report; ``desc`` is the real device's ``describe()``."""
        lines = [
            f"calibrated {desc['model']['name']} on {desc['backend']} ({desc['dtype']}, "
            f"{desc['threads']} thread(s)): {len(self.samples)} steps of "
            f"{self.held['shapes']} shapes",
            f"  {'coefficient':<26}{'affine':>12}{'context':>12}",
        ]
        for name in coefficients(self.profile):
            cells = [coefficients(self.fits[m]).get(name) for m in ("affine", "context")]
            lines.append(f"  {name:<26}" + "".join(f"{_g(v):>12}" for v in cells))
        summary = self.summary()
        lines.append(
            f"held-out steps ({self.held['folds']} folds over the shapes, seed "
            f"{self.held['seed']}), |predicted - measured| / measured:"
        )
        for model in fit.MODELS:
            lines.append(_error_line(f"  {model}", summary["heldOut"][model]))
        lines.append(
            "per term, context model: held-out steps that have the term; all steps refitted "
            "without it"
        )
        for name, term in self.held["perTerm"].items():
            have = term["heldOut"]
            mine = f"{term['steps']} steps, median {have['medianAbsPct']:.1f}%" if have else "-"
            lines.append(
                f"  {name:<26}{mine:<28} without it: median "
                f"{term['withoutTerm']['medianAbsPct']:.1f}%, p90 "
                f"{term['withoutTerm']['p90AbsPct']:.1f}%"
            )
        lines.append("grid fit (every shape in the fit):")
        for model in fit.MODELS:
            lines.append(_error_line(f"  {model}", summary["gridFit"][model]))
        if per_step:
            lines += ["", step_table(self.held["rows"])]
        return "\n".join(lines)


def run(real, grid, base) -> Calibration:
    """Measure ``grid`` on ``real``; fit both models; ``base`` gives the profile's other fields."""
    samples, shapes = calibrate.measure(real, grid)
    return _fitted(samples, shapes, base)


def _fitted(samples, shapes, base, folds: int = 4, seed: int = 0) -> Calibration:
    picked = fit.medians(samples, shapes)
    fits = {model: fit.fit_profile(picked, base, model) for model in fit.MODELS}
    return Calibration(samples, shapes, fits, fit.held_out(samples, shapes, base, folds, seed))


def coefficients(profile) -> dict:
    """The cost coefficients of ``profile`` in the run-file names (0 where the model has none)."""
    doc = profile.to_json()
    return {
        name: doc.get(name, 0.0)
        for name in (
            "overheadMs",
            "prefillMsPerToken",
            "prefillMsPerContextToken",
            "decodeBatchMs",
            "decodeMsPerSeq",
            "decodeMsPerContextToken",
        )
    }


def step_table(rows: list[dict]) -> str:
    """Held-out residuals of both models, one line per timed step."""
    lines = [
        f"{'shape':<48}{'measured ms':>12}{'affine ms':>11}{'error %':>9}"
        f"{'context ms':>12}{'error %':>9}"
    ]
    for r in rows:
        lines.append(
            f"{r['shape']:<48}{r['measuredMs']:>12.3f}{r['affineMs']:>11.3f}"
            f"{r['affineErrorPct']:>9.1f}{r['contextMs']:>12.3f}{r['contextErrorPct']:>9.1f}"
        )
    return "\n".join(lines)


def _g(value) -> str:
    return "-" if not value else f"{value:.4g}"


def _error_line(label: str, err: dict) -> str:
    return (
        f"{label}: {err['count']} steps, median {err['medianAbsPct']:.1f}%, "
        f"mean {err['meanAbsPct']:.1f}%, p90 {err['p90AbsPct']:.1f}%"
    )
