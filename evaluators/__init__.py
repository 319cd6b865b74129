"""The built-in evaluators. Each registers under the `evalproto.evaluators` entry points."""
