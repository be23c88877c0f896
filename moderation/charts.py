"""The dashboard's charts as geometry (presentation only): the template draws these as inline
SVG, styled by classes of console.css, so the page needs no script and no inline style."""

from __future__ import annotations

CHART_W, CHART_H, PAD_L, PAD_B, PAD_T = 640, 200, 44, 26, 12


def _scale(top: float) -> tuple[float, list[dict]]:
    """A round upper bound for the y axis and its grid lines."""
    top = max(top, 1)
    for step in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000):
        if top / step <= 5:
            break
    else:
        step = 10 ** len(str(int(top)))
    bound = step * -(-top // step)
    plot_h = CHART_H - PAD_B - PAD_T
    grid = [
        {"y": round(PAD_T + plot_h - plot_h * v / bound, 1), "label": f"{v:g}"}
        for v in range(0, int(bound) + 1, int(step))
    ]
    return bound, grid


def bar_chart(points: list[tuple]) -> dict:
    bound, grid = _scale(max((v for _, v in points), default=0))
    plot_w, plot_h = CHART_W - PAD_L - 8, CHART_H - PAD_B - PAD_T
    slot = plot_w / max(len(points), 1)
    bars = []
    for i, (day, value) in enumerate(points):
        h = plot_h * value / bound
        bars.append(
            {
                "x": round(PAD_L + i * slot + slot * 0.15, 1),
                "w": round(slot * 0.7, 1),
                "y": round(PAD_T + plot_h - h, 1),
                "h": round(h, 1),
                "value": value,
                "day": day,
                "label_x": round(PAD_L + i * slot + slot / 2, 1),
                "show_label": (len(points) - 1 - i) % 2 == 0,
            }
        )
    return {
        "w": CHART_W,
        "h": CHART_H,
        "grid": grid,
        "bars": bars,
        "axis_x": PAD_L,
        "axis_y": CHART_H - PAD_B,
        "label_y": CHART_H - 8,
        "right": CHART_W - 8,
    }


def line_chart(points: list[tuple]) -> dict:
    bound, grid = _scale(max((v for _, v in points if v is not None), default=0))
    plot_w, plot_h = CHART_W - PAD_L - 8, CHART_H - PAD_B - PAD_T
    slot = plot_w / max(len(points), 1)
    current: list[str]
    dots, segments, current = [], [], []
    for i, (day, value) in enumerate(points):
        x = round(PAD_L + i * slot + slot / 2, 1)
        if value is None:
            if current:
                segments.append(current)
            current = []
            dots.append(
                {
                    "x": x,
                    "y": None,
                    "value": None,
                    "day": day,
                    "label_x": x,
                    "show_label": (len(points) - 1 - i) % 2 == 0,
                }
            )
            continue
        y = round(PAD_T + plot_h - plot_h * value / bound, 1)
        current.append(f"{x},{y}")
        dots.append(
            {
                "x": x,
                "y": y,
                "value": round(value, 1),
                "day": day,
                "label_x": x,
                "show_label": (len(points) - 1 - i) % 2 == 0,
            }
        )
    if current:
        segments.append(current)
    return {
        "w": CHART_W,
        "h": CHART_H,
        "grid": grid,
        "dots": dots,
        "lines": [" ".join(s) for s in segments],
        "axis_x": PAD_L,
        "axis_y": CHART_H - PAD_B,
        "label_y": CHART_H - 8,
        "right": CHART_W - 8,
    }
