"""Fingerprints of generative models: what a checkpoint records to recognise its model."""

from .._checks import check_int
from ..errors import CheckpointError, ParameterError, UnfingerprintedModelWarning, warn_at_caller

__all__ = ["model_fingerprint", "compare_fingerprints"]


def model_fingerprint(model):
    """The fingerprint of a generative model, recorded in every checkpoint.

    Parameters
    ----------
    model : GenerativeModel

    Returns
    -------
    dict
        JSON-serialisable, with ``kind`` and the sizes ``n_states``,
        ``n_actions``, and:

        - ``kind = "kernel"`` (a :class:`TabularGenerativeModel`): the SHA-256
          of the kernel's support (which next states each pair reaches) and of
          its probabilities, both from its canonical CSR form, so a dense and a
          sparse kernel of one SSP share a fingerprint;
        - ``kind = "declared"`` (a model with an ``identity`` string, such as
          ``SimulatorGenerativeModel(..., identity=...)``): that identity;
        - ``kind = "unfingerprinted"`` (any other model): its class name only;
          nothing about its dynamics can be checked.

        A model wrapping another may expose the inner model's fingerprint as
        its own ``fingerprint`` attribute (a dict of this form); it is then
        returned as it is.

    Raises
    ------
    ParameterError
        If ``model`` lacks ``n_states``, ``n_actions`` or ``sample``, or its
        sizes are not integers ``>= 1``.

    Examples
    --------
    Two grid worlds that differ only in their success probability share their
    support, not their probabilities; a checkpoint of one is refused for the other:

    >>> from reference import (TabularGenerativeModel, compare_fingerprints, gridworld,
    ...                        model_fingerprint)
    >>> saved = model_fingerprint(TabularGenerativeModel(gridworld()))
    >>> saved["kind"], saved["n_states"], saved["n_actions"]
    ('kernel', 10, 4)
    >>> other = model_fingerprint(TabularGenerativeModel(gridworld(success=0.3)))
    >>> other["support_sha256"] == saved["support_sha256"]
    True
    >>> compare_fingerprints(saved, other, "the checkpoint")
    Traceback (most recent call last):
    ...
    reference.errors.CheckpointError: the checkpoint holds samples of another model: ...probabilities differ...
    """
    if not all(hasattr(model, name) for name in ("n_states", "n_actions", "sample")):
        raise ParameterError(
            "`model` must be a generative model with `n_states`, `n_actions` and "
            f"`sample(s, a, n, rng)`; got {type(model).__name__}."
        )
    sizes = {"n_states": check_int("model.n_states", model.n_states, low=1),
             "n_actions": check_int("model.n_actions", model.n_actions, low=1)}
    declared = getattr(model, "fingerprint", None)
    if isinstance(declared, dict):
        return dict(declared)
    identity = getattr(model, "identity", None)
    if identity is not None:
        return {"kind": "declared", **sizes, "identity": str(identity)}
    kind = type(model)
    return {"kind": "unfingerprinted", **sizes, "type": f"{kind.__module__}.{kind.__qualname__}"}


def _describe_model(fingerprint):
    kind = fingerprint.get("kind")
    if kind == "kernel":
        return f"a known kernel (support {fingerprint.get('support_sha256', '?')[:12]}...)"
    if kind == "declared":
        return f"a model of identity {fingerprint.get('identity')!r}"
    return f"an unfingerprinted {fingerprint.get('type', 'model')}"


def compare_fingerprints(saved, current, where):
    """Raise unless the model that wrote a checkpoint is the model resuming it.

    Parameters
    ----------
    saved : dict or None
        The fingerprint the checkpoint holds (:attr:`SampleStore.fingerprint`).
    current : dict
        :func:`model_fingerprint` of the resuming model.
    where : str
        The checkpoint, named in the messages.

    Returns
    -------
    None

    Raises
    ------
    CheckpointError
        Naming what differs: the sizes, the kind of model, the kernel's support
        (which next states the pairs reach), its probabilities, or the declared
        identity; or that the checkpoint holds no fingerprint.

    Warns
    -----
    UnfingerprintedModelWarning
        When both models are unfingerprinted: the samples are resumed
        unchecked.

    See Also
    --------
    model_fingerprint : the fingerprint of a model.

    Examples
    --------
    >>> from reference import TabularGenerativeModel, chain
    >>> three = model_fingerprint(TabularGenerativeModel(chain(3)))
    >>> compare_fingerprints(three, three, "run.ckpt")
    >>> four = model_fingerprint(TabularGenerativeModel(chain(4)))
    >>> compare_fingerprints(three, four, "run.ckpt")
    Traceback (most recent call last):
    ...
    reference.errors.CheckpointError: run.ckpt holds samples of another model: ... n_states = 4; ...
    """
    advice = "resume with the model that wrote it, or delete the file to start afresh."
    if not isinstance(saved, dict):
        raise CheckpointError(f"{where} holds no model fingerprint, so its samples cannot be "
                              f"matched to `model`; delete the file to start afresh.")
    for key in ("n_states", "n_actions"):
        if saved.get(key) != current[key]:
            raise CheckpointError(
                f"{where} holds samples of another model: it has {key} = {saved.get(key)!r}, "
                f"`model` has {key} = {current[key]!r}; {advice}"
            )
    if saved.get("kind") != current["kind"]:
        raise CheckpointError(
            f"{where} holds samples of {_describe_model(saved)}, and `model` is "
            f"{_describe_model(current)}; {advice}"
        )
    if current["kind"] == "unfingerprinted":
        warn_at_caller(
            f"{where} and `model` declare no identity ({current['type']}), so the checkpoint "
            "cannot be checked against the model; pass `identity=` to the simulator to have it "
            "checked.",
            UnfingerprintedModelWarning,
        )
        return
    what = {
        "support_sha256": "the kernel's support differs (some pair reaches other next states)",
        "probabilities_sha256": "the kernel's transition probabilities differ",
        "identity": (f"the declared identity differs: {saved.get('identity')!r} in the file, "
                     f"{current.get('identity')!r} for `model`"),
        "streams": (f"its random streams differ: {saved.get('streams')!r} in the file, "
                    f"{current.get('streams')!r} for `model`"),
    }
    for key, difference in what.items():
        if saved.get(key) != current.get(key):
            raise CheckpointError(f"{where} holds samples of another model: {difference}; "
                                  f"{advice}")
