/** Pearson's chi-square goodness of fit, as the sampling tests use it. */

/** Wilson–Hilferty upper quantile of chi-square with `df` degrees of freedom at z (p=0.001: 3.09). */
export function chiSquareCritical(df: number, z = 3.0902): number {
  const a = 2 / (9 * df);
  return df * (1 - a + z * Math.sqrt(a)) ** 3;
}

/**
 * The statistic of observed counts against expected ones (the same keys), bins expected below 5
 * merged into one; `bins` counts those compared.
 */
export function chiSquare(
  observed: ReadonlyMap<unknown, number>,
  expected: ReadonlyMap<unknown, number>,
): { stat: number; bins: number } {
  let stat = 0, bins = 0, restObs = 0, restExp = 0;
  for (const [key, e] of expected) {
    if (e === 0) continue;
    const o = observed.get(key) ?? 0;
    if (e < 5) {
      restObs += o;
      restExp += e;
    } else {
      stat += (o - e) ** 2 / e;
      bins++;
    }
  }
  if (restExp > 0) {
    stat += (restObs - restExp) ** 2 / restExp;
    bins++;
  }
  return { stat, bins };
}
