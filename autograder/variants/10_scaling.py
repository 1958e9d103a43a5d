"""Notebook 10 (scaling laws): its mutants and its alternatives.

``MUTANTS``: typical student bugs; each must lose points.
``ALTERNATIVES``: valid solutions written another way; each must keep every point."""

from lmcourse.authoring.mutants import Alternative, Mutant, patch

MUTANTS = [
    # --- parameters
    Mutant("12 n_layer d: the square forgotten", "transformer_params", patch(
        ("return 12 * n_layer * d_model ** 2", "return 12 * n_layer * d_model"))),
    Mutant("counts the attention projections only (4 n_layer d²)", "transformer_params", patch(
        ("return 12 * n_layer * d_model ** 2", "return 4 * n_layer * d_model ** 2"))),
    Mutant("one block too few (n_layer - 1)", "transformer_params", patch(
        ("return 12 * n_layer * d_model ** 2", "return 12 * (n_layer - 1) * d_model ** 2"))),
    Mutant("returns a float where the exercise says int (12.0 * ...)", "transformer_params", patch(
        ("return 12 * n_layer * d_model ** 2", "return 12.0 * n_layer * d_model ** 2"))),
    Mutant("one block too few in the general count", "transformer_params", patch(
        ("return 2 * d_model * n_layer * (2 * d_attn + d_ff)",
         "return 2 * d_model * (n_layer - 1) * (2 * d_attn + d_ff)"))),
    Mutant("ignores the d_ff it is given", "transformer_params", patch(
        ("d_ff = 4 * d_model if d_ff is None else d_ff", "d_ff = 4 * d_model"))),
    Mutant("forgets the factor 2 of the general count", "transformer_params", patch(
        ("return 2 * d_model * n_layer * (2 * d_attn + d_ff)", "return d_model * n_layer * (2 * d_attn + d_ff)"))),
    # --- compute
    Mutant("forward pass only: 2 N D", "training_flops", patch(
        ("flops = 6.0 * n_params * n_tokens", "flops = 2.0 * n_params * n_tokens"))),
    Mutant("the attention term not tripled for training", "training_flops", patch(
        ("flops += 3 * 2.0 * n_layer * n_ctx * d_attn * n_tokens",
         "flops += 2.0 * n_layer * n_ctx * d_attn * n_tokens"))),
    Mutant("a PF-day of an hour (1e15 * 3600)", "training_flops", patch(
        ("return flops / (1e15 * 86_400)", "return flops / (1e15 * 3600)"))),
    # --- power laws
    Mutant("alpha with the slope's sign", "fit_power_law", patch(
        ("return float(math.exp(intercept)), float(-slope)", "return float(math.exp(intercept)), float(slope)"))),
    Mutant("log10 for the fit, exp of the intercept (natural log vs log10)", "fit_power_law", patch(
        ("slope, intercept = np.polyfit(np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float)), 1)",
         "slope, intercept = np.polyfit(np.log10(np.asarray(x, dtype=float)), "
         "np.log10(np.asarray(y, dtype=float)), 1)"))),
    # in full: it rewrites most of the cell
    Mutant("leaves out the irreducible loss (E = 0, a line in log space)", "fit_power_law_offset", '''
def fit_power_law_offset(x, y, delta=1e-3):
    slope, intercept = np.polyfit(np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float)), 1)
    return 0.0, float(math.exp(intercept)), float(-slope)
'''),
    Mutant("returns log A (the fitted parameter itself)", "fit_power_law_offset", patch(
        ("return math.exp(best[0]), math.exp(best[1]), best[2]", "return math.exp(best[0]), best[1], best[2]"))),
    Mutant("log10 of x in the fit, natural logs elsewhere", "fit_power_law_offset", patch(
        ("lx = torch.tensor(np.log(np.asarray(x, dtype=float)), dtype=torch.float64)",
         "lx = torch.tensor(np.log10(np.asarray(x, dtype=float)), dtype=torch.float64)"))),
    Mutant("returns (A, alpha, E) in the wrong order", "fit_power_law_offset", patch(
        ("return math.exp(best[0]), math.exp(best[1]), best[2]",
         "return math.exp(best[1]), best[2], math.exp(best[0])"))),
    # --- IsoFLOP
    Mutant("the parabola's vertex sign: exp(b / 2a)", "isoflop_parabola", patch(
        ("return (float(a), float(b), float(c)), float(math.exp(-b / (2 * a)))",
         "return (float(a), float(b), float(c)), float(math.exp(b / (2 * a)))"))),
    Mutant("fits in log10 N but takes exp of the vertex", "isoflop_parabola", patch(
        ("a, b, c = np.polyfit(np.log(np.asarray(params, dtype=float)), np.asarray(losses, dtype=float), 2)",
         "a, b, c = np.polyfit(np.log10(np.asarray(params, dtype=float)), np.asarray(losses, dtype=float), 2)"))),
    Mutant("no check that the parabola opens upwards", "isoflop_parabola", patch(
        ('''
if a <= 0:
    raise ValueError("the losses of this budget do not bend upwards: no minimum in log N")
''', ""))),
    # in full: it rewrites most of the cell
    Mutant("the swept size of the lowest loss instead of the parabola's minimum", "isoflop_minima", '''
def isoflop_minima(budgets, params, losses):
    out = {}
    for budget in sorted(set(budgets)):
        mine = [(lo, n) for c, n, lo in zip(budgets, params, losses) if c == budget]
        out[budget] = float(min(mine)[1])
    return out
'''),
    Mutant("D_opt = C / N: the 6 forgotten", "fit_exponents", patch(
        ("d_opt = [c / (6 * n) for c, n in zip(budgets, n_opt)]", "d_opt = [c / n for c, n in zip(budgets, n_opt)]"))),
    Mutant("a with fit_power_law's sign (N_opt shrinking with C)", "fit_exponents", patch(
        ('return {"a": -minus_a, "k_N": k_n, "b": -minus_b, "k_D": k_d}',
         'return {"a": minus_a, "k_N": k_n, "b": -minus_b, "k_D": k_d}'))),
    # --- the closed form
    Mutant("C where the formula has C / 6", "compute_optimal", patch(
        ("n_opt = G * (C / 6) ** (beta / (alpha + beta))", "n_opt = G * C ** (beta / (alpha + beta))"))),
    Mutant("N_opt's exponent alpha / (alpha + beta)", "compute_optimal", patch(
        ("n_opt = G * (C / 6) ** (beta / (alpha + beta))", "n_opt = G * (C / 6) ** (alpha / (alpha + beta))"))),
    Mutant("parameters per token (N / D)", "tokens_per_parameter", patch(
        ("return d / n", "return n / d"))),
    # --- the questions
    Mutant("q_six: six layers", "q_six", patch(('answer_q_six = "B"', 'answer_q_six = "A"'))),
    Mutant("q_trend: tokens per parameter grow", "q_trend", patch(('answer_q_trend = "C"', 'answer_q_trend = "A"'))),
    # in full: it rewrites the cell. The reference is imported when the answer runs: in a graded kernel the
    # import fails (the reference is withheld)
    Mutant("graded answer calls the course's reference", "compute_optimal", '''
def compute_optimal(C, A, B, alpha, beta):
    from lmcourse.reference.scaling import compute_optimal as _theirs

    return _theirs(C, A, B, alpha, beta)
'''),
    # gaming: the table's answers typed in (the shipped sweep's minima), not computed from the rows given
    Mutant("hard-codes the shipped table's IsoFLOP minima", "isoflop_minima", '''
def isoflop_minima(budgets, params, losses):
    return {1e11: 4.7e3, 2e11: 1.16e4, 4e11: 1.76e4}
'''),
]

ALTERNATIVES = [
    Alternative("non_embedding_params through the general count", "transformer_params", '''
def non_embedding_params(n_layer, d_model):
    return n_layer * (4 * d_model * d_model + 2 * d_model * (4 * d_model))


def transformer_params(n_layer, d_model, d_attn=None, d_ff=None):
    d_attn = d_model if d_attn is None else d_attn
    d_ff = 4 * d_model if d_ff is None else d_ff
    return 2 * d_model * n_layer * (2 * d_attn + d_ff)
'''),
    Alternative("transformer_params summing the layers one by one, and the usual count from it", "transformer_params",
                '''
def non_embedding_params(n_layer, d_model):
    return transformer_params(n_layer, d_model)


def transformer_params(n_layer, d_model, d_attn=None, d_ff=None):
    if d_attn is None:
        d_attn = d_model
    if d_ff is None:
        d_ff = 4 * d_model
    per_block = 3 * d_model * d_attn + d_attn * d_model + d_model * d_ff + d_ff * d_model
    return n_layer * per_block
'''),
    Alternative("training_flops as forward plus backward, numpy floats", "training_flops", '''
def training_flops(n_params, n_tokens, n_layer=None, n_ctx=None, d_attn=None):
    per_token = np.float64(n_params)
    if None not in (n_layer, n_ctx, d_attn):
        per_token = per_token + n_layer * n_ctx * d_attn
    forward = 2 * per_token * n_tokens
    return forward + 2 * forward


def pf_days(flops):
    return flops / 8.64e19
'''),
    Alternative("pf_days with seconds spelt out, and training_flops with one test for the attention", "training_flops",
                '''
PETAFLOP = 10 ** 15
SECONDS_PER_DAY = 24 * 60 * 60


def training_flops(n_params, n_tokens, n_layer=None, n_ctx=None, d_attn=None):
    attention = 0.0 if None in (n_layer, n_ctx, d_attn) else 6.0 * n_layer * n_ctx * d_attn
    return 6.0 * n_params * n_tokens + attention * n_tokens


def pf_days(flops):
    return flops / PETAFLOP / SECONDS_PER_DAY
'''),
    Alternative("fit_power_law by the normal equations", "fit_power_law", '''
def fit_power_law(x, y):
    lx = [math.log(v) for v in x]
    ly = [math.log(v) for v in y]
    n = len(lx)
    mx, my = sum(lx) / n, sum(ly) / n
    slope = sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)
    return math.exp(my - slope * mx), -slope
'''),
    Alternative("fit_power_law with torch.linalg.lstsq in float64", "fit_power_law", '''
def fit_power_law(x, y):
    lx = torch.log(torch.tensor(x, dtype=torch.float64))
    ly = torch.log(torch.tensor(y, dtype=torch.float64))
    X = torch.stack([torch.ones_like(lx), lx], dim=1)
    coef = torch.linalg.lstsq(X, ly[:, None]).solution[:, 0]
    return math.exp(coef[0].item()), -coef[1].item()
'''),
    Alternative("fit_power_law_offset: a search over E, a log-space line inside (scipy-free, no L-BFGS)",
                "fit_power_law_offset", '''
def fit_power_law_offset(x, y, delta=1e-3):
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    lx = np.log(x)

    def line(E):
        slope, intercept = np.polyfit(lx, np.log(y - E), 1)
        pred = np.log(E + np.exp(intercept + slope * lx))
        return float(np.sum((pred - np.log(y)) ** 2)), math.exp(intercept), -slope

    lo, hi = 0.0, float(y.min()) * (1 - 1e-9)
    grid = np.linspace(lo, hi, 200)[:-1]
    best = min(grid, key=lambda E: line(E)[0])
    step = grid[1] - grid[0]
    a, b = max(lo, best - step), min(hi * (1 - 1e-12), best + step)
    g = (math.sqrt(5) - 1) / 2
    for _ in range(200):                           # golden-section search on E
        c, d = b - g * (b - a), a + g * (b - a)
        if line(c)[0] < line(d)[0]:
            b = d
        else:
            a = c
    E = (a + b) / 2
    _, A, alpha = line(E)
    return E, A, alpha
'''),
    Alternative("fit_power_law_offset with Adam then L-BFGS from a few starts", "fit_power_law_offset", '''
def fit_power_law_offset(x, y, delta=1e-3):
    lx = torch.log(torch.tensor(x, dtype=torch.float64))
    ly = torch.log(torch.tensor(y, dtype=torch.float64))

    def objective(p):
        pred = torch.logaddexp(p[0], p[1] - p[2] * lx)
        return torch.nn.functional.huber_loss(pred, ly, delta=delta, reduction="sum") / delta

    best = None
    for e_share in (0.3, 0.7, 0.95):
        for alpha in (0.1, 0.3, 0.8):
            e0 = math.log(min(y) * e_share)
            a0 = math.log(y[0] - min(y) * e_share) + alpha * lx[0].item()
            p = torch.tensor([e0, a0, alpha], dtype=torch.float64, requires_grad=True)
            opt = torch.optim.LBFGS([p], max_iter=1000, tolerance_grad=1e-14, tolerance_change=1e-16,
                                    line_search_fn="strong_wolfe")

            def closure():
                opt.zero_grad()
                value = objective(p)
                value.backward()
                return value

            opt.step(closure)
            value = objective(p).item()
            if best is None or value < best[0]:
                best = (value, p.detach().clone())
    e, a, alpha = best[1].tolist()
    return math.exp(e), math.exp(a), alpha
'''),
    Alternative("isoflop_parabola by a Vandermonde least squares", "isoflop_parabola", '''
def isoflop_parabola(params, losses):
    u = np.log(np.array(params, dtype=float))
    V = np.stack([u ** 2, u, np.ones_like(u)], axis=1)
    (a, b, c), *_ = np.linalg.lstsq(V, np.array(losses, dtype=float), rcond=None)
    if not a > 0:
        raise ValueError("no minimum")
    return (a, b, c), np.exp(-b / (2 * a))
'''),
    Alternative("isoflop_minima grouping with a defaultdict", "isoflop_minima", '''
from collections import defaultdict


def isoflop_minima(budgets, params, losses):
    groups = defaultdict(lambda: ([], []))
    for c, n, lo in zip(budgets, params, losses):
        groups[c][0].append(n)
        groups[c][1].append(lo)
    return {c: isoflop_parabola(ns, ls)[1] for c, (ns, ls) in groups.items()}
'''),
    Alternative("fit_exponents from a + b = 1 and k_N k_D = 1/6", "fit_exponents", '''
def fit_exponents(budgets, n_opt):
    k_n, minus_a = fit_power_law(budgets, n_opt)
    a = -minus_a
    return {"a": a, "k_N": k_n, "b": 1 - a, "k_D": 1 / (6 * k_n)}
'''),
    Alternative("compute_optimal in log space", "compute_optimal", '''
def compute_optimal(C, A, B, alpha, beta):
    s = alpha + beta
    log_n = (math.log(alpha * A) - math.log(beta * B)) / s + beta / s * math.log(C / 6)
    n_opt = math.exp(log_n)
    return n_opt, C / (6 * n_opt)
'''),
    Alternative("tokens_per_parameter in closed form", "tokens_per_parameter", '''
def tokens_per_parameter(C, A, B, alpha, beta):
    n_opt, _ = compute_optimal(C, A, B, alpha, beta)
    return (C / 6) / n_opt ** 2
'''),
    Alternative("answers in lower case with spaces", "q_six", '''
answer_q_six = " b "
'''),
]
