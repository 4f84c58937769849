"""The live commands' side of devlane: `status`, `gc --cluster` and `verify --server` talk to a cluster with the
`kubernetes` client. Nothing here runs during `render`, `plan`, `diff`, `lint`, `preview` or `cmp generate`, which
stay offline: the API imports these modules inside the live functions only, and only `kube` imports the client
(inside its functions too, so that importing this package costs nothing).

- `kube`: the kubeconfig (`--kubeconfig`, `$KUBECONFIG`, `~/.kube/config`, in-cluster), requests, discovery, and
  the errors a user reads when the cluster cannot be reached or refuses the credentials;
- `lane`: a rendered flow's objects, as its kustomization lists them;
- `health`: what "ready" means for each kind of object (pure: no cluster);
- `status`, `sweep`, `dryrun`: the three commands' work.
"""
