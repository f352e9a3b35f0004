"""Trust checks: what decides whether a gain can be believed (noise floor, power, headroom,
control arms, placebo, preflight estimate) and what the loop runs before and after training."""
