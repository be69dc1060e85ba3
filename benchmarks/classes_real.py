"""Per-class accuracy on a real multi-class table: dprect's RectangleClassifier beside
diffprivlib's GaussianNB and LogisticRegression at the same ε (issue #24).

Table: ggplot2's ``diamonds`` as plotnine ships it (MIT; 53,940 rows), label ``cut`` with
its five public classes Fair, Good, Very Good, Premium, Ideal; features carat, depth,
table, price, x, y, z on the public domains of benchmarks/real_data.py (ggplot2's
documented ranges at their recording resolution; never read from the data). A public
random split (seed 0): 80% to fit, 20% to score.

Models, every private one at the same total ε (its whole budget for all five classes):

* ``dprect`` — ``dprect.RectangleClassifier(ε, δ = 10⁻⁶, classes=the five cuts,
  grid=the public domains)``: one rectangle per class for ONE charge (parallel
  composition), method ``auto``; the documented rule for rows in none or several.
* ``dprect-pure`` — the same with δ = 0 (pure ε-DP, as diffprivlib's models are).
* ``dpl-gnb`` — ``diffprivlib.models.GaussianNB(epsilon=ε, bounds=the domains' public
  bounds)`` (pure ε-DP; it reads the class list from y, as scikit-learn does).
* ``dpl-lr`` — ``diffprivlib.models.LogisticRegression(epsilon=ε, data_norm=√d)`` on the
  features scaled to [0, 1] by the same public bounds (pure ε-DP; one-vs-rest, ε/5 a
  class).
* references without privacy: scikit-learn's GaussianNB and LogisticRegression (same
  scaling), and the majority class of the training split.

Metrics on the test split: per-class accuracy (recall: the share of a class's rows
predicted as that class), overall accuracy and balanced accuracy (the mean of the five);
each private model is run ``--runs`` times per ε with independent noise (OS entropy) and the
median is reported.

diffprivlib 0.6.6 imports a scikit-learn internal that 1.7+ no longer has, so this runs in
its own environment (``make bench-classes`` builds ``.bench-venvs/diffprivlib`` with
scikit-learn 1.6.1, diffprivlib, plotnine and dprect). Writes docs/figures/classes_real.json
(``--out`` elsewhere) and prints the table docs/results.md quotes.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

CUTS = ["Fair", "Good", "Very Good", "Premium", "Ideal"]
OUT = Path(__file__).resolve().parent.parent / "docs" / "figures" / "classes_real.json"


def load() -> tuple[np.ndarray, np.ndarray, list[str], list[Any]]:
    """diamonds' features, cut labels (as str), names and public domains."""
    from plotnine.data import diamonds as frame
    from real_data import diamonds

    table = diamonds()  # the features and domains of the real-data benchmark
    frame = frame.dropna(subset=[*table.features, "cut"])
    X = frame.loc[:, table.features].to_numpy(dtype=np.float64)
    y = frame["cut"].astype(str).to_numpy()
    return X, y, list(table.features), list(table.domains)


def per_class(y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, float]:
    return {c: float(np.mean(y_pred[y_true == c] == c)) for c in CUTS}


def scores(y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, Any]:
    pc = per_class(y_true, y_pred)
    return {"per_class": pc, "accuracy": float(np.mean(y_true == y_pred)),
            "balanced": float(np.mean(list(pc.values())))}


def median_scores(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"per_class": {c: float(np.median([r["per_class"][c] for r in runs]))
                          for c in CUTS},
            "accuracy": float(np.median([r["accuracy"] for r in runs])),
            "balanced": float(np.median([r["balanced"] for r in runs])),
            "runs": len(runs)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epsilons", default="0.5,1,2,4,8")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    epsilons = [float(e) for e in args.epsilons.split(",")]

    import diffprivlib
    import sklearn
    from diffprivlib.models import GaussianNB as DPGaussianNB
    from diffprivlib.models import LogisticRegression as DPLogisticRegression
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB

    import dprect
    from dprect.app.classifier import PrivacyLeakWarning

    X, y, names, domains = load()
    order = np.random.default_rng(0).permutation(len(X))  # a public split
    cut = int(0.8 * len(X))
    tr, te = order[:cut], order[cut:]
    lo = np.array([d.bounds[0] for d in domains])
    hi = np.array([d.bounds[1] for d in domains])

    def scaled(A: np.ndarray) -> np.ndarray:
        return np.clip((A - lo) / (hi - lo), 0.0, 1.0)

    d = X.shape[1]
    report: dict[str, Any] = {
        "table": "diamonds (plotnine.data, ggplot2; MIT)", "rows": len(X),
        "train": len(tr), "test": len(te), "features": names,
        "classes": CUTS, "class_rows_test": {c: int(np.sum(y[te] == c)) for c in CUTS},
        "versions": {"dprect": dprect.__version__, "diffprivlib": diffprivlib.__version__,
                     "scikit-learn": sklearn.__version__},
        "runs": args.runs, "results": {}}

    majority = max(CUTS, key=lambda c: int(np.sum(y[tr] == c)))
    ref: dict[str, Any] = {"majority": scores(y[te], np.full(len(te), majority))}
    ref["gnb"] = scores(y[te], GaussianNB().fit(X[tr], y[tr]).predict(X[te]))
    ref["lr"] = scores(y[te], LogisticRegression(max_iter=1000).fit(
        scaled(X[tr]), y[tr]).predict(scaled(X[te])))
    report["nonprivate"] = ref

    def dprect_model(eps: float, delta: float) -> Any:
        return dprect.RectangleClassifier(eps, delta, classes=CUTS, grid=domains)

    models = {
        "dprect": lambda eps: (dprect_model(eps, 1e-6), X),
        "dprect-pure": lambda eps: (dprect_model(eps, 0.0), X),
        "dpl-gnb": lambda eps: (DPGaussianNB(epsilon=eps, bounds=(lo, hi)), X),
        "dpl-lr": lambda eps: (DPLogisticRegression(epsilon=eps, data_norm=float(np.sqrt(d))),
                               scaled(X)),
    }
    for eps in epsilons:
        row: dict[str, Any] = {}
        for name, make in models.items():
            runs, seconds = [], []
            for _ in range(args.runs):
                model, data = make(eps)
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", PrivacyLeakWarning)
                    warnings.simplefilter("ignore", UserWarning)  # diffprivlib's notes
                    model.fit(data[tr], y[tr])
                seconds.append(time.perf_counter() - start)
                runs.append(scores(y[te], np.asarray(model.predict(data[te])).astype(str)))
            row[name] = {**median_scores(runs), "fit_seconds_median": float(np.median(seconds))}
            if name.startswith("dprect"):
                row[name]["method"] = model.result_.method
                row[name]["empty_classes"] = [c for c, r in zip(
                    CUTS, model.result_.results, strict=True) if r.empty]
        report["results"][str(eps)] = row
        print_row(eps, row)
    print_reference(ref)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written {args.out}")
    return 0


def _cells(s: dict[str, Any]) -> str:
    pc = " | ".join(f"{100 * s['per_class'][c]:.1f}" for c in CUTS)
    return f"{pc} | {100 * s['accuracy']:.1f} | {100 * s['balanced']:.1f}"


def print_row(eps: float, row: dict[str, Any]) -> None:
    for name, s in row.items():
        print(f"| {eps:g} | {name} | {_cells(s)} |", flush=True)


def print_reference(ref: dict[str, Any]) -> None:
    for name, s in ref.items():
        print(f"| — | {name} (not private) | {_cells(s)} |")


if __name__ == "__main__":
    raise SystemExit(main())
