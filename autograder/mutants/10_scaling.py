"""Typical student bugs for notebook 10 (scaling laws). Each must lose points."""

from lmcourse.authoring.mutants import Mutant, patch

MUTANTS = [
    # --- parameters
    Mutant("12 n_layer d: the square forgotten", "non_embedding_params", patch(
        ("return 12 * n_layer * d_model ** 2", "return 12 * n_layer * d_model"))),
    Mutant("counts the attention projections only (4 n_layer d²)", "non_embedding_params", patch(
        ("return 12 * n_layer * d_model ** 2", "return 4 * n_layer * d_model ** 2"))),
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
    Mutant("a PF-day of an hour (1e15 * 3600)", "pf_days", patch(
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
