"""Design-based covariance of an estimate from weighted, stratified, clustered reports, by
Taylor linearization (the ``survey`` package's ``svymean``/``svyratio`` formulas).

An estimator that solves a weighted estimating equation ``sum_i w_i u(o_i; theta) = 0``
(the Hajek report shares through the inverse channel, the weighted pseudo-likelihood)
has, to first order, ``theta_hat - theta = sum_i w_i psi(o_i)``: one influence value per
report ``o``.  The reports reach this module as cells, one per distinct (report, stratum,
primary sampling unit) with their sum of weights, so that nothing is looped over
respondents.  The PSU totals ``z_hc = sum_{i in (h, c)} w_i psi(o_i)`` give the
stratified with-replacement variance

    V = sum_h n_h / (n_h - 1) sum_c (z_hc - zbar_h)(z_hc - zbar_h)^T

with ``n_h`` the PSUs of stratum ``h`` and ``zbar_h`` their mean.  Without clusters each
row is its own PSU: the rows of one cell (same report, stratum and weight) have the same
total, so a cell of ``m`` rows stands for ``m`` equal PSUs (:attr:`DesignCells.repeats`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DesignCells:
    """Weighted counts of reports by stratum and PSU.

    Parameters
    ----------
    report : ndarray of int
        The observation (report index of the channel) of each cell.
    weight : ndarray of float
        The sum of the weights of the cell's rows in one of the PSUs it stands for.
    stratum : ndarray of int
        The stratum of each cell (0 .. strata - 1).
    psu : ndarray of int
        The PSU of each cell (0 .. psus - 1; one stratum per PSU): its cluster, or without
        clusters the cell itself.
    repeats : ndarray of int
        How many equal PSUs the cell's PSU stands for: 1 with clusters; without, the rows
        of the cell (each its own PSU, each with the cell's report and weight).
    """

    report: np.ndarray
    weight: np.ndarray
    stratum: np.ndarray
    psu: np.ndarray
    repeats: np.ndarray

    @property
    def total_weight(self) -> float:
        """``N_hat``: the sum of every row's weight."""
        return float(np.sum(self.weight * self.repeats))

    def layout(self) -> dict[str, int]:
        """The design's size for a result's extras: its strata and PSUs (a cell standing for
        ``m`` equal PSUs counts ``m``)."""
        first = np.unique(self.psu, return_index=True)[1]
        return {"strata": int(self.stratum.max()) + 1, "psus": int(self.repeats[first].sum())}

    def weighted_counts(self, n_obs: int) -> np.ndarray:
        """The sum of weights per report (the Hajek estimators' sufficient statistic)."""
        return np.bincount(self.report, weights=self.weight * self.repeats, minlength=n_obs)


def psu_totals(psi: np.ndarray, cells: DesignCells) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The PSU totals ``z_hc = sum w_i psi(o_i)`` (rows: PSUs; columns: the estimate's
    coordinates), each PSU's stratum and how many equal PSUs each row stands for.
    ``psi``: the influence values, one column per report (``k x n_obs``)."""
    z = cells.weight[:, None] * psi.T[cells.report]
    psus = int(cells.psu.max()) + 1 if len(cells.psu) else 0
    totals = np.zeros((psus, psi.shape[0]))
    np.add.at(totals, cells.psu, z)
    strata = np.zeros(psus, dtype=np.int64)
    strata[cells.psu] = cells.stratum
    repeats = np.ones(psus, dtype=np.int64)
    repeats[cells.psu] = cells.repeats     # the same for every cell of a PSU
    return totals, strata, repeats


def linearized_covariance(psi: np.ndarray, cells: DesignCells) -> np.ndarray:
    """The stratified with-replacement covariance of ``sum_i w_i psi(o_i)`` (the module's
    formula).  Every stratum needs two PSUs or more (the caller refuses one alone).

    Examples
    --------
    Two strata of two unweighted rows each, a scalar influence value per report (+1, -1):
    each stratum adds ``2 / 1 * (1 + 1)``

    >>> cells = DesignCells(report=np.array([0, 1, 0, 1]), weight=np.ones(4), stratum=np.array([0, 0, 1, 1]),
    ...                     psu=np.arange(4), repeats=np.ones(4, dtype=int))
    >>> linearized_covariance(np.array([[1.0, -1.0]]), cells).tolist()
    [[8.0]]
    """
    z, strata, m = psu_totals(psi, cells)
    k = psi.shape[0]
    n_h = np.bincount(strata, weights=m)
    sums = np.zeros((len(n_h), k))
    np.add.at(sums, strata, m[:, None] * z)
    centred = z - (sums / np.maximum(n_h, 1)[:, None])[strata]
    scale = (n_h / np.maximum(n_h - 1, 1))[strata]
    return (centred * (m * scale)[:, None]).T @ centred


def mom_influence(Q: np.ndarray, T: np.ndarray, shares: np.ndarray, total: float) -> np.ndarray:
    """Influence values (``p x n_obs``) of the Hajek method of moments ``w_hat = Q^-1 (T
    lambda_hat - T b)``, ``lambda_hat`` the weighted report shares: per unit of weight,
    ``Q^-1 T (e_o - lambda_hat) / N_hat``."""
    centred = T - (T @ shares)[:, None]
    return np.linalg.solve(Q, centred) / total


def mle_influence(K: np.ndarray, lam: np.ndarray, B: np.ndarray, shares: np.ndarray, total: float) -> np.ndarray:
    """Influence values (``p x n_obs``) of the weighted pseudo-maximum-likelihood estimate
    in ``w = alpha + B theta``: ``B J^-1 s(o) / N_hat`` with the score ``s(o) = B^T K[o]^T /
    lambda_o`` and ``J = B^T K^T diag(lambda_hat / lambda^2) K B`` the observed information
    per unit of weight (minus the derivative of the weighted estimating equation, as
    ``survey``'s linearization takes it); a report the estimate makes impossible
    (``lambda_o = 0``) is not observed and scores 0.  The score is centred at the weighted
    shares (its weighted mean is 0 at an estimate inside the simplex)."""
    seen = lam > 0
    inv = np.where(seen, 1.0 / np.where(seen, lam, 1.0), 0.0)
    score = B.T @ (K * inv[:, None]).T
    info = B.T @ (K.T * (shares * inv ** 2)) @ K @ B
    centred = score - (score @ shares)[:, None]
    return B @ np.linalg.solve(info, centred) / total


def weighted_mean(values: np.ndarray, cells: DesignCells) -> tuple[float, float]:
    """The Hajek mean ``sum_i w_i y_i / N_hat`` of per-row values (``values[o]`` for the
    rows of report ``o``) and its linearized variance (influence ``(y_o - mean) / N_hat``).

    Examples
    --------
    >>> cells = DesignCells(report=np.array([0, 1]), weight=np.array([1.0, 3.0]), stratum=np.zeros(2, int),
    ...                     psu=np.arange(2), repeats=np.ones(2, dtype=int))
    >>> weighted_mean(np.array([0.0, 1.0]), cells)
    (0.75, 0.140625)
    """
    total = cells.total_weight
    mean = float(cells.weighted_counts(len(values)) @ values / total)
    psi = ((values - mean) / total)[None, :]
    return mean, float(linearized_covariance(psi, cells)[0, 0])


# ---- replication: the stratified jackknife over PSUs ---------------------------------------------------
@dataclass(frozen=True)
class DesignJackknife:
    """The replicates of the stratified delete-a-PSU jackknife (``survey``'s JKn) of a design.

    Replicate ``r`` deletes one PSU (or one group of PSUs) of stratum ``h`` and scales the
    rest of that stratum by ``n_h / (n_h - n_hr)`` (``n_hr`` the PSUs deleted); the
    variance of an estimate ``theta`` is ``sum_r factor_r (theta_r - theta)^2``
    (``mse = TRUE``: deviations from the full-sample estimate), ``factor_r = (g_h - 1) /
    g_h`` for ``g_h`` replicates of the stratum.  It serves the estimators that have no
    closed-form influence values (the NPMLE's functionals): each replicate is a refit.

    Attributes
    ----------
    cells : DesignCells
        The design's cells.
    deleted : list of (ndarray, ndarray)
        Per replicate, the PSUs it deletes rows of and the share of their rows deleted
        (1, or a fraction for a cell that stands for several equal PSUs).
    stratum : ndarray
        The stratum of each replicate.
    scale : ndarray
        The factor on the kept PSUs of the replicate's stratum.
    factors : ndarray
        The variance factor of each replicate (a replicate standing for ``m`` equal
        deletions counts ``m`` times).
    method : str
        How the replicates were made, in words.
    """

    cells: DesignCells
    deleted: list
    stratum: np.ndarray
    scale: np.ndarray
    factors: np.ndarray
    method: str

    @property
    def replicates(self) -> int:
        return len(self.factors)

    def counts(self, r: int, n_obs: int) -> np.ndarray:
        """The weighted counts per report of replicate ``r``."""
        c = self.cells
        psus, share = self.deleted[r]
        gone = np.zeros(int(c.psu.max()) + 1)
        gone[psus] = share
        keep = (1.0 - gone[c.psu]) * np.where(c.stratum == self.stratum[r], self.scale[r], 1.0)
        return np.bincount(c.report, weights=c.weight * c.repeats * keep, minlength=n_obs)

    def variance(self, values: np.ndarray, center: np.ndarray) -> np.ndarray:
        """The replicates' covariance (:func:`replicate_covariance`) of their estimates
        ``values`` (``R x k``) about the full sample's ``center`` (``k``)."""
        return replicate_covariance(center, values, self.factors)


def replicate_covariance(theta: np.ndarray, thetas: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """``sum_r factor_r (theta_r - theta)(theta_r - theta)^T``: the variance of every
    replication method (``mse = TRUE``, deviations from the full sample's ``theta``, ``k``),
    ``thetas`` the replicates' estimates (``R x k``) and ``factors`` each one's weight in
    the sum (a jackknife's ``(g_h - 1) / g_h``; replicate weights' ``scale * rscale_r``).

    >>> replicate_covariance(np.array([1.0]), np.array([[0.0], [3.0]]), np.array([0.5, 0.5])).tolist()
    [[2.5]]
    """
    d = np.asarray(thetas, dtype=float).reshape(len(factors), -1) - np.ravel(theta)[None, :]
    return (d * np.asarray(factors, dtype=float)[:, None]).T @ d


def design_jackknife(cells: DesignCells, groups: int, seed: int = 0) -> DesignJackknife:
    """The stratified jackknife of ``cells``: one replicate per PSU while the PSUs (counting a
    cell that stands for ``m`` equal PSUs once) are at most ``groups``, else the PSUs of
    each stratum dealt at random (seeded) into ``g_h`` near-equal groups, ``g_h`` in
    proportion to the stratum's PSUs and at least 2, one replicate per group (the
    delete-a-group jackknife, Kott 2001).

    Examples
    --------
    Two strata of two PSUs: four replicates, each with factor 1/2; deleting PSU 0 doubles
    PSU 1, the other stratum untouched.

    >>> cells = DesignCells(report=np.array([0, 1, 0, 1]), weight=np.ones(4), stratum=np.array([0, 0, 1, 1]),
    ...                     psu=np.arange(4), repeats=np.ones(4, dtype=int))
    >>> jk = design_jackknife(cells, groups=50)
    >>> jk.replicates, jk.factors.tolist(), jk.counts(0, 2).tolist()
    (4, [0.5, 0.5, 0.5, 0.5], [1.0, 3.0])
    """
    psus = int(cells.psu.max()) + 1
    strata = np.zeros(psus, dtype=np.int64)
    strata[cells.psu] = cells.stratum
    m = np.ones(psus, dtype=np.int64)
    m[cells.psu] = cells.repeats
    n_h = np.bincount(strata, weights=m)
    if psus <= groups:
        # one replicate per PSU row; a row standing for m equal PSUs is m equal replicates
        deleted = [(np.array([p]), np.array([1.0 / m[p]])) for p in range(psus)]
        owner, dropped = strata, np.ones(psus)
        factors = m * (n_h[strata] - 1) / n_h[strata]
        method = f"stratified jackknife (JKn), one PSU deleted at a time: {psus} replicates"
    else:
        rng = np.random.default_rng(seed)
        g = np.minimum(np.maximum(2, np.round(groups * n_h / n_h.sum())), n_h).astype(np.int64)
        deleted, owner_list, dropped_list = [], [], []
        for h in range(len(n_h)):
            mine = np.flatnonzero(strata == h)
            units = rng.permutation(np.repeat(mine, m[mine]))       # each PSU once per row it stands for
            for k in range(g[h]):
                gone = np.bincount(units[k::g[h]], minlength=psus)
                hit = np.flatnonzero(gone)
                deleted.append((hit, gone[hit] / m[hit]))
                owner_list.append(h)
                dropped_list.append(float(gone.sum()))
        owner, dropped = np.array(owner_list), np.array(dropped_list)
        factors = ((g - 1) / g)[owner]
        method = (f"stratified delete-a-group jackknife: each stratum's PSUs dealt at random (seed {seed}) "
                  f"into groups, {len(factors)} replicates")
    scale = n_h[owner] / (n_h[owner] - dropped)
    return DesignJackknife(cells, deleted, np.asarray(owner), scale, np.asarray(factors, dtype=float), method)
