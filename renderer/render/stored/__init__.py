"""Stored: the early cutoff. What a render derives from the whole repository, kept for the next render that
would derive it again.

A one-file change re-parses one file (`parsing`), but the model, the selector indexes and the documents
themselves are rebuilt from every file: at 5,000 services that is most of a warm render. Yet those passes read
only each object's outline (`k8s.outline`: apiVersion, kind, metadata, selectors, ports, pod template labels,
container names, entry points' specs), and most changes (an image, an env value, a resource limit) leave every
outline as it was. So a render stores, per listing of the repository, each file's blob id and its documents'
outlines (its *heads*, kept as a digest), each kept document's kind, apiVersion, name and namespace, what
loading said of them, and the model built from them. The next render reuses the model when each file has the
same blob id, or else the same heads; its documents then decode their objects (and outlines) only when a stage
reads them (a flow reads the few objects it copies), as the passes over the whole repository were stored with
the model.

One seam: loading asks `memo.ModelMemo` (as its `Memo`) for the entry of its listing and the documents it
restores; the pipeline asks it for the model, decoded with its whole-repository passes (`model_codec`), or built
and stored by a forked child. No other stage reads what is stored.
"""
