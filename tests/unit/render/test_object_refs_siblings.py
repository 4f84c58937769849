"""Every reference path of `renderer.render.plugins.object_refs` on its own (issue 41 point 3): for each field of each
modeled kind that names or selects another object, a case whose object reaches the baseline through that field alone
is refused by the output policy, naming the field and what it reaches, and the same object pointing at the flow's own
is accepted; the kinds each family models, what kinds share on purpose, the selector forms and operators, and the keys
an unmodeled kind is read by, each item on its own.

The lists are this file's own (never imported from devlane), so dropping a path, a kind, a key or an operator from
devlane's fails a case here. The policy runs in-process (`support.policy_lane`): one call per case, milliseconds each.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from support.policy_lane import BASE, NS, OWN, added, obj

from renderer.render.plugins.object_refs import (
    LABEL,
    PLAIN,
    Reference,
    loose_references,
    modeled,
    references,
    selector_matcher,
)
from renderer.render.settings.repo_config import PluginAllow

P = "spec.template.spec"
FLOWS = "a plugin's objects reference only the flow's own (named <name>-pr-7, in its namespaces)"
JOB = {"restartPolicy": "Never"}
# the baseline's object of each kind a case names (support.policy_lane.BASELINE)
BASELINE = {"Secret": "creds", "ConfigMap": "cfg", "PersistentVolumeClaim": "data", "ServiceAccount": "api-sa",
            "Service": "db", "Deployment": "db", "Gateway": "web", "HorizontalPodAutoscaler": "hpa",
            "TriggerAuthentication": "auth"}


def n(kind: str, base: bool) -> str:
    """The name a case's field gives: the baseline's object of `kind`, or one of the flow's."""
    return BASELINE[kind] if base else f"{kind.lower()}-pr-7"


def deployment(pod: dict | None = None, kind: str = "Deployment") -> dict:
    return obj("apps/v1", kind, "x-pr-7", spec={"selector": {"matchLabels": OWN}, "template": {
        "metadata": {"labels": OWN}, "spec": {"containers": [{"name": "c"}], **(pod or {})}}})


def volume(source: dict) -> dict:
    return deployment({"volumes": [{"name": "v", **source}]})


def container(key: str, **fields) -> dict:
    """A Deployment whose container `c` of list `key` carries `fields`."""
    return deployment({key: [{"name": "c", **fields}]} | ({"containers": []} if key != "containers" else {}))


def secret_ref(base: bool) -> dict:
    return {"name": n("Secret", base), "key": "k"}


def baseline(kind: str) -> str:
    return f"the baseline {kind}/{BASELINE[kind]}"


# case -> (the object, given whether its field reaches the baseline; the field; what the refusal says it names)
Case = tuple[Callable[[bool], dict], str, str]
NAMED: dict[str, Case] = {
    # a pod spec's names
    "serviceAccountName": (lambda b: deployment({"serviceAccountName": n("ServiceAccount", b)}),
                           f"{P}.serviceAccountName", baseline("ServiceAccount")),
    "serviceAccount (deprecated)": (lambda b: deployment({"serviceAccount": n("ServiceAccount", b)}),
                                    f"{P}.serviceAccount", baseline("ServiceAccount")),
    "volume configMap": (lambda b: volume({"configMap": {"name": n("ConfigMap", b)}}), f"{P}.volumes[v].configMap",
                         baseline("ConfigMap")),
    "volume secret": (lambda b: volume({"secret": {"secretName": n("Secret", b)}}), f"{P}.volumes[v].secret",
                      baseline("Secret")),
    "projected secret": (lambda b: volume({"projected": {"sources": [{"serviceAccountToken": {"path": "t"}}, {
        "secret": {"name": n("Secret", b)}}]}}), f"{P}.volumes[v].projected.sources[1].secret", baseline("Secret")),
    "projected configMap": (lambda b: volume({"projected": {"sources": [{"configMap": {"name": n("ConfigMap", b)}}]}}),
                            f"{P}.volumes[v].projected.sources[0].configMap", baseline("ConfigMap")),
    "volume persistentVolumeClaim": (lambda b: volume({"persistentVolumeClaim": {"claimName": "scratch" if b else
                                                                               "scratch-pr-7"}}),
                                     f"{P}.volumes[v].persistentVolumeClaim",
                                     "PersistentVolumeClaim/scratch, which is not an object of the flow"),
    "azureFile secretName": (lambda b: volume({"azureFile": {"secretName": n("Secret", b), "shareName": "s"}}),
                             f"{P}.volumes[v].azureFile.secretName", baseline("Secret")),
    "ephemeral dataSource": (lambda b: volume({"ephemeral": {"volumeClaimTemplate": {"spec": {"dataSource": {
        "kind": "PersistentVolumeClaim", "name": n("PersistentVolumeClaim", b)}}}}}),
        f"{P}.volumes[v].ephemeral.volumeClaimTemplate.spec.dataSource", baseline("PersistentVolumeClaim")),
    "ephemeral dataSourceRef": (lambda b: volume({"ephemeral": {"volumeClaimTemplate": {"spec": {"dataSourceRef": {
        "kind": "PersistentVolumeClaim", "name": n("PersistentVolumeClaim", b)}}}}}),
        f"{P}.volumes[v].ephemeral.volumeClaimTemplate.spec.dataSourceRef", baseline("PersistentVolumeClaim")),
    "resourceClaimName": (lambda b: deployment({"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu" if b
                                                                    else "gpu-pr-7"}]}),
                          f"{P}.resourceClaims[gpu].resourceClaimName", "ResourceClaim/gpu, which is not an object of "
                                                                         "the flow"),
    "resourceClaimTemplateName": (lambda b: deployment({"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName":
                                                                            "gpus" if b else "gpus-pr-7"}]}),
                                  f"{P}.resourceClaims[gpu].resourceClaimTemplateName",
                                  "ResourceClaimTemplate/gpus, which is not an object of the flow"),
    # StatefulSets
    "StatefulSet serviceName": (lambda b: obj("apps/v1", "StatefulSet", "x-pr-7", spec={
        "serviceName": n("Service", b), "selector": {"matchLabels": OWN}, "template": {
            "metadata": {"labels": OWN}, "spec": {"containers": [{"name": "c"}]}}}),
        "spec.serviceName", baseline("Service")),
    "StatefulSet volumeClaimTemplates": (lambda b: obj("apps/v1", "StatefulSet", "x-pr-7", spec={
        "selector": {"matchLabels": OWN}, "template": {"metadata": {"labels": OWN}, "spec": {
            "containers": [{"name": "c"}]}}, "volumeClaimTemplates": [{"metadata": {"name": "d"}, "spec": {
                "dataSource": {"kind": "PersistentVolumeClaim", "name": n("PersistentVolumeClaim", b)}}}]}),
        "spec.volumeClaimTemplates[d].spec.dataSource", baseline("PersistentVolumeClaim")),
    # claims
    "PVC dataSource": (lambda b: obj("v1", "PersistentVolumeClaim", "x-pr-7", spec={"dataSource": {
        "kind": "PersistentVolumeClaim", "name": n("PersistentVolumeClaim", b)}}), "spec.dataSource",
        baseline("PersistentVolumeClaim")),
    "PVC dataSourceRef": (lambda b: obj("v1", "PersistentVolumeClaim", "x-pr-7", spec={"dataSourceRef": {
        "apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "snap" if b else "snap-pr-7"}}),
        "spec.dataSourceRef", "VolumeSnapshot/snap, which is not an object of the flow"),
    "PVC dataSourceRef namespace": (lambda b: obj("v1", "PersistentVolumeClaim", "x-pr-7", spec={"dataSourceRef": {
        "kind": "PersistentVolumeClaim", "name": "data-pr-7", "namespace": "prod" if b else NS}}),
        "spec.dataSourceRef", "PersistentVolumeClaim/data-pr-7 in namespace prod, which is not the flow's"),
    "PVC volumeName": (lambda b: obj("v1", "PersistentVolumeClaim", "x-pr-7", spec={"volumeName": "pv-1"} if b else {}),
                       "spec.volumeName", "PersistentVolume/pv-1, which is the cluster's, never the flow's"),
    "PVC selector": (lambda b: obj("v1", "PersistentVolumeClaim", "x-pr-7", spec={"selector": {"matchLabels": {
        "disk": "fast"}}} if b else {"selector": {}}), "spec.selector",
        "PersistentVolume/(by label), which is the cluster's, never the flow's"),
    # ServiceAccounts, token Secrets, endpoints
    "ServiceAccount secrets": (lambda b: obj("v1", "ServiceAccount", "x-pr-7", secrets=[{"name": n("Secret", b)}]),
                               "secrets[0]", baseline("Secret")),
    "token Secret": (lambda b: obj("v1", "Secret", "x-pr-7", type="kubernetes.io/service-account-token", meta={
        "annotations": {"kubernetes.io/service-account.name": n("ServiceAccount", b)}}),
        "metadata.annotations.kubernetes.io/service-account.name", baseline("ServiceAccount")),
    "Endpoints addresses": (lambda b: obj("v1", "Endpoints", "e-pr-7", subsets=[{"addresses": [{"ip": "10.0.0.1"}, {
        "ip": "10.0.0.2", "targetRef": {"kind": "Pod", "name": "db-0" if b else "p-pr-7"}}]}]),
        "subsets[0].addresses[1].targetRef", "Pod/db-0, which is not an object of the flow"),
    "Endpoints notReadyAddresses": (lambda b: obj("v1", "Endpoints", "e-pr-7", subsets=[{}, {"notReadyAddresses": [{
        "ip": "10.0.0.1", "targetRef": {"name": "db-0" if b else "p-pr-7"}}]}]),
        "subsets[1].notReadyAddresses[0].targetRef", "Pod/db-0, which is not an object of the flow"),
    "EndpointSlice targetRef": (lambda b: obj("discovery.k8s.io/v1", "EndpointSlice", "e-pr-7", meta={"labels": {
        "kubernetes.io/service-name": "s-pr-7"}}, endpoints=[{"addresses": ["10.0.0.1"], "targetRef": {
            "name": "db-0" if b else "p-pr-7"}}]), "endpoints[0].targetRef",
        "Pod/db-0, which is not an object of the flow"),
    # autoscaling
    "HPA scaleTargetRef": (lambda b: obj("autoscaling/v2", "HorizontalPodAutoscaler", "h-pr-7", spec={
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": n("Deployment", b)}}),
        "spec.scaleTargetRef", baseline("Deployment")),
    "HPA describedObject": (lambda b: obj("autoscaling/v2", "HorizontalPodAutoscaler", "h-pr-7", spec={
        "scaleTargetRef": {"kind": "Deployment", "name": "x-pr-7"}, "metrics": [{"type": "Resource"}, {
            "type": "Object", "object": {"describedObject": {"kind": "Service", "name": n("Service", b)}}}]}),
        "spec.metrics[1].object.describedObject", baseline("Service")),
    "HPA v2beta1 object target": (lambda b: obj("autoscaling/v2beta1", "HorizontalPodAutoscaler", "h-pr-7", spec={
        "scaleTargetRef": {"kind": "Deployment", "name": "x-pr-7"}, "metrics": [{"type": "Object", "object": {
            "target": {"kind": "Deployment", "name": n("Deployment", b)}}}]}),
        "spec.metrics[0].object.target", baseline("Deployment")),
    "VPA targetRef": (lambda b: obj("autoscaling.k8s.io/v1", "VerticalPodAutoscaler", "v-pr-7", spec={"targetRef": {
        "kind": "Deployment", "name": n("Deployment", b)}}), "spec.targetRef", baseline("Deployment")),
    "ScaledObject scaleTargetRef": (lambda b: obj("keda.sh/v1alpha1", "ScaledObject", "s-pr-7", spec={
        "scaleTargetRef": {"name": n("Deployment", b)}}), "spec.scaleTargetRef", baseline("Deployment")),
    "ScaledObject HPA": (lambda b: obj("keda.sh/v1alpha1", "ScaledObject", "s-pr-7", spec={
        "scaleTargetRef": {"name": "x-pr-7"}, "advanced": {"horizontalPodAutoscalerConfig": {
            "name": n("HorizontalPodAutoscaler", b)}}}),
        "spec.advanced.horizontalPodAutoscalerConfig.name", baseline("HorizontalPodAutoscaler")),
    "ScaledObject authenticationRef": (lambda b: obj("keda.sh/v1alpha1", "ScaledObject", "s-pr-7", spec={
        "scaleTargetRef": {"name": "x-pr-7"}, "triggers": [{"type": "cpu"}, {"type": "redis", "authenticationRef": {
            "name": n("TriggerAuthentication", b)}}]}),
        "spec.triggers[1].authenticationRef", baseline("TriggerAuthentication")),
    "ScaledJob authenticationRef": (lambda b: obj("keda.sh/v1alpha1", "ScaledJob", "s-pr-7", spec={
        "jobTargetRef": {"template": {"spec": {**JOB, "containers": [{"name": "c"}]}}}, "triggers": [{
            "type": "redis", "authenticationRef": {"name": n("TriggerAuthentication", b)}}]}),
        "spec.triggers[0].authenticationRef", baseline("TriggerAuthentication")),
    "ScaledJob pod spec": (lambda b: obj("keda.sh/v1alpha1", "ScaledJob", "s-pr-7", spec={"jobTargetRef": {
        "template": {"spec": {**JOB, "serviceAccountName": n("ServiceAccount", b), "containers": [{"name": "c"}]}}}}),
        "spec.jobTargetRef.template.spec.serviceAccountName", baseline("ServiceAccount")),
    # Ingress
    "Ingress defaultBackend resource": (lambda b: obj("networking.k8s.io/v1", "Ingress", "i-pr-7", spec={
        "defaultBackend": {"resource": {"apiGroup": "k8s.example.com", "kind": "Bucket", "name": "assets" if b
                                        else "assets-pr-7"}}}),
        "spec.defaultBackend.resource", "Bucket/assets, which is not an object of the flow"),
    "Ingress path resource": (lambda b: obj("networking.k8s.io/v1", "Ingress", "i-pr-7", spec={"rules": [{}, {"http": {
        "paths": [{"path": "/", "backend": {"resource": {"kind": "ConfigMap", "name": n("ConfigMap", b)}}}]}}]}),
        "spec.rules[1].http.paths[0].backend.resource", baseline("ConfigMap")),
    "Ingress tls": (lambda b: obj("networking.k8s.io/v1", "Ingress", "i-pr-7", spec={"tls": [{"hosts": ["a"]}, {
        "secretName": n("Secret", b)}]}), "spec.tls[1].secretName", baseline("Secret")),
    # Prometheus Operator
    "ServiceMonitor bearerTokenSecret": (lambda b: obj("monitoring.coreos.com/v1", "ServiceMonitor", "m-pr-7", spec={
        "selector": {"matchLabels": {"monitor": "m-pr-7"}}, "endpoints": [{"port": "a"}, {
            "bearerTokenSecret": secret_ref(b)}]}), "spec.endpoints[1].bearerTokenSecret", baseline("Secret")),
    "ServiceMonitor basicAuth": (lambda b: obj("monitoring.coreos.com/v1", "ServiceMonitor", "m-pr-7", spec={
        "selector": {"matchLabels": {"monitor": "m-pr-7"}}, "endpoints": [{"basicAuth": {
            "username": secret_ref(False), "password": secret_ref(b)}}]}),
        "spec.endpoints[0].basicAuth.password", baseline("Secret")),
    "ServiceMonitor tls ca secret": (lambda b: obj("monitoring.coreos.com/v1", "ServiceMonitor", "m-pr-7", spec={
        "selector": {"matchLabels": {"monitor": "m-pr-7"}}, "endpoints": [{"tlsConfig": {"ca": {
            "secret": secret_ref(b)}}}]}), "spec.endpoints[0].tlsConfig.ca.secret", baseline("Secret")),
    "ServiceMonitor tls ca configMap": (lambda b: obj("monitoring.coreos.com/v1", "ServiceMonitor", "m-pr-7", spec={
        "selector": {"matchLabels": {"monitor": "m-pr-7"}}, "endpoints": [{"tlsConfig": {"ca": {"configMap": {
            "name": n("ConfigMap", b), "key": "ca.crt"}}}}]}),
        "spec.endpoints[0].tlsConfig.ca.configMap", baseline("ConfigMap")),
    "ServiceMonitor keySecret": (lambda b: obj("monitoring.coreos.com/v1", "ServiceMonitor", "m-pr-7", spec={
        "selector": {"matchLabels": {"monitor": "m-pr-7"}}, "endpoints": [{"tlsConfig": {"keySecret": {
            "name": n("Secret", b), "key": "tls.key", "optional": False}}}]}),
        "spec.endpoints[0].tlsConfig.keySecret", baseline("Secret")),
    "ServiceMonitor oauth2 clientId": (lambda b: obj("monitoring.coreos.com/v1", "ServiceMonitor", "m-pr-7", spec={
        "selector": {"matchLabels": {"monitor": "m-pr-7"}}, "endpoints": [{"oauth2": {"clientId": {"configMap": {
            "name": n("ConfigMap", b), "key": "id"}}, "clientSecret": secret_ref(False)}}]}),
        "spec.endpoints[0].oauth2.clientId.configMap", baseline("ConfigMap")),
    "PodMonitor authorization": (lambda b: obj("monitoring.coreos.com/v1", "PodMonitor", "m-pr-7", spec={
        "selector": {"matchLabels": OWN}, "podMetricsEndpoints": [{"authorization": {
            "credentials": secret_ref(b)}}]}),
        "spec.podMetricsEndpoints[0].authorization.credentials", baseline("Secret")),
    # the Gateway API, each key
    "Gateway certificateRefs": (lambda b: obj("gateway.networking.k8s.io/v1", "Gateway", "g-pr-7", spec={
        "gatewayClassName": "istio", "listeners": [{"name": "https", "tls": {"certificateRefs": [{
            "name": n("Secret", b)}]}}]}), "spec.listeners[0].tls.certificateRefs[0]", baseline("Secret")),
    "Gateway parametersRef": (lambda b: obj("gateway.networking.k8s.io/v1", "Gateway", "g-pr-7", spec={
        "gatewayClassName": "istio", "infrastructure": {"parametersRef": {"group": "", "kind": "ConfigMap",
                                                                          "name": n("ConfigMap", b)}}}),
        "spec.infrastructure.parametersRef", baseline("ConfigMap")),
    "route mirror backendRef": (lambda b: obj("gateway.networking.k8s.io/v1", "HTTPRoute", "r-pr-7", spec={
        "rules": [{"filters": [{"type": "RequestMirror", "requestMirror": {"backendRef": {
            "name": n("Service", b), "port": 80}}}]}]}),
        "spec.rules[0].filters[0].requestMirror.backendRef", baseline("Service")),
    "route extensionRef": (lambda b: obj("gateway.networking.k8s.io/v1", "HTTPRoute", "r-pr-7", spec={
        "rules": [{"filters": [{"type": "ExtensionRef", "extensionRef": {"group": "", "name": n("ConfigMap", b)}}]}]}),
        "spec.rules[0].filters[0].extensionRef", baseline("ConfigMap")),
    "policy targetRef": (lambda b: obj("gateway.networking.k8s.io/v1alpha3", "BackendTLSPolicy", "p-pr-7", spec={
        "targetRef": {"group": "", "kind": "Service", "name": n("Service", b)}}), "spec.targetRef",
        baseline("Service")),
    "policy targetRefs": (lambda b: obj("gateway.networking.k8s.io/v1", "BackendTLSPolicy", "p-pr-7", spec={
        "targetRefs": [{"group": "", "kind": "Service", "name": "s-pr-7"}, {"name": n("Service", b)}]}),
        "spec.targetRefs[1]", baseline("Service")),
    "policy caCertificateRefs": (lambda b: obj("gateway.networking.k8s.io/v1", "BackendTLSPolicy", "p-pr-7", spec={
        "targetRefs": [{"kind": "Service", "name": "s-pr-7"}], "validation": {"caCertificateRefs": [{
            "name": n("ConfigMap", b)}]}}), "spec.validation.caCertificateRefs[0]", baseline("ConfigMap")),
    "ReferenceGrant to": (lambda b: obj("gateway.networking.k8s.io/v1beta1", "ReferenceGrant", "g-pr-7", spec={
        "to": [{"group": "", "kind": "Secret", "name": n("Secret", b)}]}), "spec.to[0]", baseline("Secret")),
    "ReferenceGrant to every name": (lambda b: obj("gateway.networking.k8s.io/v1beta1", "ReferenceGrant", "g-pr-7",
                                                   spec={"to": [{"kind": "Secret"} if b else {"kind": "Secret",
                                                                                              "name": "s-pr-7"}]}),
                                     "spec.to[0]", "Secret/*, which is not an object of the flow"),
    # ACK
    "ACK FieldExport to Secret": (lambda b: obj("services.k8s.aws/v1alpha1", "FieldExport", "f-pr-7", spec={
        "from": {"path": ".status", "resource": {"kind": "DBInstance", "name": "db-pr-7"}},
        "to": {"kind": "Secret", "name": n("Secret", b)}}),
        "spec.to", baseline("Secret")),
    "ACK FieldExport to ConfigMap": (lambda b: obj("services.k8s.aws/v1alpha1", "FieldExport", "f-pr-7", spec={
        "from": {"resource": {"kind": "DBInstance", "name": "db-pr-7"}}, "to": {"kind": "configmap",
                                                                               "name": n("ConfigMap", b)}}),
        "spec.to", baseline("ConfigMap")),
    "ACK FieldExport to namespace": (lambda b: obj("services.k8s.aws/v1alpha1", "FieldExport", "f-pr-7", spec={
        "from": {"resource": {"kind": "DBInstance", "name": "db-pr-7"}}, "to": {"kind": "secret", "name": "s-pr-7",
                                                                               "namespace": "prod" if b else NS}}),
        "spec.to", "Secret/s-pr-7 in namespace prod, which is not the flow's"),
    "ACK FieldExport from": (lambda b: obj("services.k8s.aws/v1alpha1", "FieldExport", "f-pr-7", spec={
        "from": {"resource": {"kind": "Deployment", "name": n("Deployment", b)}}, "to": {"name": "c-pr-7"}}),
        "spec.from.resource", baseline("Deployment")),
    "ACK *Ref": (lambda b: obj("rds.services.k8s.aws/v1alpha1", "DBInstance", "d-pr-7", spec={"dbSubnetGroupRef": {
        "from": {"name": "net" if b else "net-pr-7"}}}), "spec.dbSubnetGroupRef",
        "DbSubnetGroup/net, which is not an object of the flow"),
    "ACK *Refs": (lambda b: obj("rds.services.k8s.aws/v1alpha1", "DBCluster", "d-pr-7", spec={"vpcSecurityGroupRefs": [
        {"from": {"name": "sg-pr-7"}}, {"from": {"name": "sg" if b else "sg2-pr-7"}}]}), "spec.vpcSecurityGroupRefs[1]",
        "VpcSecurityGroup/sg, which is not an object of the flow"),
    "ACK *Ref namespace": (lambda b: obj("sqs.services.k8s.aws/v1alpha1", "Queue", "q-pr-7", spec={"kmsKeyRef": {
        "from": {"name": "k-pr-7", "namespace": "prod" if b else NS}}}), "spec.kmsKeyRef",
        "KmsKey/k-pr-7 in namespace prod, which is not the flow's"),
    "ACK Secret key": (lambda b: obj("rds.services.k8s.aws/v1alpha1", "DBInstance", "d-pr-7", spec={
        "masterUserPassword": {"name": n("Secret", b), "key": "password", "namespace": NS}}),
        "spec.masterUserPassword", baseline("Secret")),
    "ACK Secret key namespace": (lambda b: obj("rds.services.k8s.aws/v1alpha1", "DBInstance", "d-pr-7", spec={
        "masterUserPassword": {"name": "s-pr-7", "key": "password", "namespace": "prod" if b else NS}}),
        "spec.masterUserPassword", "Secret/s-pr-7 in namespace prod, which is not the flow's"),
    "ACK Bucket *Ref": (lambda b: obj("s3.services.k8s.aws/v1alpha1", "Bucket", "b-pr-7", spec={"name": "b",
                                                                                               "loggingRef": {
        "from": {"name": "logs" if b else "logs-pr-7"}}}), "spec.loggingRef", "Logging/logs, which is not an object "
                                                                                "of the flow"),
    # Config Connector
    "GCP *Ref": (lambda b: obj("sql.cnrm.cloud.google.com/v1beta1", "SQLDatabase", "d-pr-7", spec={"instanceRef": {
        "name": "sql" if b else "sql-pr-7"}}), "spec.instanceRef", "Instance/sql, which is not an object of the flow"),
    "GCP *Ref namespace": (lambda b: obj("sql.cnrm.cloud.google.com/v1beta1", "SQLUser", "u-pr-7", spec={
        "instanceRef": {"name": "sql-pr-7", "namespace": "prod" if b else NS}}), "spec.instanceRef",
        "Instance/sql-pr-7 in namespace prod, which is not the flow's"),
    "GCP secretKeyRef": (lambda b: obj("sql.cnrm.cloud.google.com/v1beta1", "SQLUser", "u-pr-7", spec={
        "instanceRef": {"external": "projects/p/instances/i"}, "password": {"valueFrom": {
            "secretKeyRef": secret_ref(b)}}}), "spec.password.valueFrom.secretKeyRef", baseline("Secret")),
    "GCP SQLInstance *Ref": (lambda b: obj("sql.cnrm.cloud.google.com/v1beta1", "SQLInstance", "i-pr-7", spec={
        "settings": {"ipConfiguration": {"privateNetworkRef": {"name": "vpc" if b else "vpc-pr-7"}}}}),
        "spec.settings.ipConfiguration.privateNetworkRef", "PrivateNetwork/vpc, which is not an object of the flow"),
    # Azure Service Operator
    "Azure *Reference": (lambda b: obj("sql.azure.com/v1api20211101", "ServersDatabase", "d-pr-7", spec={
        "owner": {"name": "server"}, "elasticPoolReference": {"group": "sql.azure.com", "kind": "ServersElasticPool",
                                                               "name": "pool" if b else "pool-pr-7"}}),
        "spec.elasticPoolReference", "ServersElasticPool/pool, which is not an object of the flow"),
    "Azure Secret key": (lambda b: obj("sql.azure.com/v1api20211101", "ServersDatabase", "d-pr-7", spec={
        "owner": {"name": "server"}, "operatorSpec": {"secrets": {"connectionString": secret_ref(b)}}}),
        "spec.operatorSpec.secrets.connectionString", baseline("Secret")),
    # External Secrets
    "ExternalSecret target": (lambda b: obj("external-secrets.io/v1", "ExternalSecret", "e-pr-7", spec={
        "secretStoreRef": {"name": "vault"}, "target": {"name": n("Secret", b)}}), "spec.target.name",
        baseline("Secret")),
    "ExternalSecret generatorRef": (lambda b: obj("external-secrets.io/v1", "ExternalSecret", "e-pr-7", spec={
        "target": {"name": "t-pr-7"}, "data": [{"sourceRef": {"generatorRef": {"kind": "ConfigMap",
                                                                                "name": n("ConfigMap", b)}}}]}),
        "spec.data[0].sourceRef.generatorRef", baseline("ConfigMap")),
    "ExternalSecret dataFrom generatorRef": (lambda b: obj("external-secrets.io/v1", "ExternalSecret", "e-pr-7", spec={
        "target": {"name": "t-pr-7"}, "dataFrom": [{"sourceRef": {"generatorRef": {
            "kind": "Password", "name": "pw" if b else "pw-pr-7"}}}]}),
        "spec.dataFrom[0].sourceRef.generatorRef", "Password/pw, which is not an object of the flow"),
    "ExternalSecret templateFrom configMap": (lambda b: obj("external-secrets.io/v1", "ExternalSecret", "e-pr-7", spec={
        "target": {"name": "t-pr-7", "template": {"templateFrom": [{"configMap": {"name": n("ConfigMap", b)}}]}}}),
        "spec.target.template.templateFrom[0].configMap", baseline("ConfigMap")),
    "ExternalSecret templateFrom secret": (lambda b: obj("external-secrets.io/v1", "ExternalSecret", "e-pr-7", spec={
        "target": {"name": "t-pr-7", "template": {"templateFrom": [{}, {"secret": {"name": n("Secret", b)}}]}}}),
        "spec.target.template.templateFrom[1].secret", baseline("Secret")),
    # Strimzi, RabbitMQ
    "KafkaUser password": (lambda b: obj("kafka.strimzi.io/v1beta2", "KafkaUser", "u-pr-7", meta={"labels": {
        "strimzi.io/cluster": "events"}}, spec={"authentication": {"type": "scram-sha-512", "password": {
            "valueFrom": {"secretKeyRef": secret_ref(b)}}}}),
        "spec.authentication.password.valueFrom.secretKeyRef", baseline("Secret")),
    "RabbitMQ connectionSecret": (lambda b: obj("rabbitmq.com/v1beta1", "Queue", "q-pr-7", spec={
        "name": "q", "rabbitmqClusterReference": {"connectionSecret": {"name": n("Secret", b)}}}),
        "spec.rabbitmqClusterReference.connectionSecret", baseline("Secret")),
    "RabbitMQ userReference": (lambda b: obj("rabbitmq.com/v1beta1", "Permission", "p-pr-7", spec={
        "vhost": "/", "userReference": {"name": "admin" if b else "admin-pr-7"},
        "rabbitmqClusterReference": {"name": "broker"}}), "spec.userReference",
        "User/admin, which is not an object of the flow"),
}
ENV_SOURCES = {  # each container list, each env source
    "env secretKeyRef": (lambda b: {"env": [{"name": "E", "valueFrom": {"secretKeyRef": secret_ref(b)}}]},
                         "env[E].valueFrom.secretKeyRef", "Secret"),
    "env configMapKeyRef": (lambda b: {"env": [{"name": "A", "value": "1"}, {"name": "E", "valueFrom": {
        "configMapKeyRef": {"name": n("ConfigMap", b), "key": "k"}}}]}, "env[E].valueFrom.configMapKeyRef",
        "ConfigMap"),
    "envFrom secretRef": (lambda b: {"envFrom": [{"secretRef": {"name": n("Secret", b)}}]}, "envFrom[0].secretRef",
                          "Secret"),
    "envFrom configMapRef": (lambda b: {"envFrom": [{"prefix": "A_"}, {"configMapRef": {"name": n("ConfigMap", b)}}]},
                             "envFrom[1].configMapRef", "ConfigMap"),
}
for _key in ("initContainers", "containers", "ephemeralContainers"):
    for _case, (_fields, _at, _kind) in ENV_SOURCES.items():
        NAMED[f"{_key} {_case}"] = (lambda b, k=_key, f=_fields: container(k, **f(b)), f"{P}.{_key}[c].{_at}",
                                    baseline(_kind))
# the secret references of in-tree and CSI volume sources: each key, and each source that carries one
SECRET_SOURCES = [("csi", "nodePublishSecretRef"), ("csi", "nodeExpandSecretRef"), ("csi", "nodeStageSecretRef"),
                  ("csi", "controllerPublishSecretRef"), ("csi", "controllerExpandSecretRef"), ("cephfs", "secretRef"),
                  ("rbd", "secretRef"), ("iscsi", "secretRef"), ("flexVolume", "secretRef"), ("scaleIO", "secretRef"),
                  ("storageos", "secretRef")]
for _source, _key in SECRET_SOURCES:
    NAMED[f"volume {_source} {_key}"] = (lambda b, s=_source, k=_key: volume({s: {"driver": "d", k: {
        "name": n("Secret", b)}}}), f"{P}.volumes[v].{_source}.{_key}", baseline("Secret"))
# where each pod-bearing kind keeps its pod spec
POD_KINDS = {
    "Pod": (lambda pod: obj("v1", "Pod", "x-pr-7", meta={"labels": OWN}, spec=pod), "spec"),
    "PodTemplate": (lambda pod: obj("v1", "PodTemplate", "x-pr-7", template={"metadata": {"labels": OWN},
                                                                            "spec": pod}), "template.spec"),
    "ReplicationController": (lambda pod: obj("v1", "ReplicationController", "x-pr-7", spec={"selector": OWN,
                                                                                             "template": {
        "metadata": {"labels": OWN}, "spec": pod}}), P),
    **{k: (lambda pod, k=k: obj("apps/v1", k, "x-pr-7", spec={"selector": {"matchLabels": OWN}, "template": {
        "metadata": {"labels": OWN}, "spec": pod}}), P) for k in ("Deployment", "StatefulSet", "DaemonSet",
                                                                  "ReplicaSet")},
    "Job": (lambda pod: obj("batch/v1", "Job", "x-pr-7", spec={"template": {"metadata": {"labels": OWN},
                                                                             "spec": {**JOB, **pod}}}), P),
    "CronJob": (lambda pod: obj("batch/v1", "CronJob", "x-pr-7", spec={"schedule": "@daily", "jobTemplate": {"spec": {
        "template": {"metadata": {"labels": OWN}, "spec": {**JOB, **pod}}}}}), "spec.jobTemplate.spec.template.spec"),
    "ScaledJob": (lambda pod: obj("keda.sh/v1alpha1", "ScaledJob", "x-pr-7", spec={"jobTargetRef": {"template": {
        "metadata": {"labels": OWN}, "spec": {**JOB, **pod}}}}), "spec.jobTargetRef.template.spec"),
}
for _api, _kind in [("v1", "HTTPRoute"), ("v1", "GRPCRoute"), ("v1alpha2", "TCPRoute"), ("v1alpha2", "TLSRoute"),
                    ("v1alpha2", "UDPRoute")]:
    NAMED[f"{_kind} parentRefs"] = (
        lambda b, a=_api, k=_kind: obj(f"gateway.networking.k8s.io/{a}", k, "r-pr-7", spec={"parentRefs": [
            {"name": "g-pr-7"}, {"name": n("Gateway", b), "sectionName": "http"}]}),
        "spec.parentRefs[1]", baseline("Gateway"))
for _kind, (_build, _where) in POD_KINDS.items():
    NAMED[f"{_kind} pod spec"] = (lambda b, build=_build: build({"containers": [{"name": "c"}], "volumes": [{
        "name": "v", "secret": {"secretName": n("Secret", b)}}]}), f"{_where}.volumes[v].secret", baseline("Secret"))


def refusal(path: str, names: str) -> str:
    return f"(rule reference): {path} names {names}: {FLOWS}"


@pytest.mark.parametrize("case", sorted(NAMED))
def test_a_field_naming_the_baseline_is_refused_and_naming_the_flows_own_is_accepted(case):
    """The refusal names the field and what it reaches; the model reads the field once, as what it names."""
    build, path, names = NAMED[case]
    assert added(build(True)) == [refusal(path, names)]
    assert added(build(False)) == []
    found = [r for r in references(build(True)) if r.path == path]
    assert len(found) == 1 and not found[0].shared, found
    if names.startswith("the baseline "):
        kind, _, name = names.removeprefix("the baseline ").partition("/")
        kind = "" if case in KINDLESS else kind  # the field does not say: the policy takes the named object's
        assert (found[0].kind, found[0].name, found[0].namespace) in ((kind, name, None), (kind, name, NS)), found


KINDLESS = {"policy targetRefs", "route extensionRef"}


def test_a_reference_to_the_flows_own_object_of_another_namespace_is_accepted_where_the_trusted_policy_lists_it():
    build, _, _ = NAMED["GCP *Ref namespace"]
    assert added(build(True), allow=PluginAllow(namespaces=("prod",))) == []


def test_owner_references_are_the_metadata_rules_not_followed_as_references():
    cm = obj("v1", "ConfigMap", "c-pr-7", meta={"ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                                                      "name": "db", "uid": "1"}]})
    assert [(r.path, r.kind, r.name) for r in references(cm)] == [("metadata.ownerReferences[0]", "Deployment", "db")]
    assert added(cm) == ["(rule metadata): metadata.ownerReferences is set: owner references, finalizers and "
                         "server-set fields are the cluster's, not a plugin's"]


# -- selectors ---------------------------------------------------------------------------------------------------------

DB = {"matchLabels": BASE}
MINE = {"matchLabels": OWN}


def affinity(kind: str, how: str, term: dict) -> dict:
    key = f"{how}DuringSchedulingIgnoredDuringExecution"
    wrapped = term if how == "required" else {"weight": 1, "podAffinityTerm": term}
    return deployment({"affinity": {kind: {key: [wrapped]}}})


SELECTS = "selects the pods of baseline Deployment/db: a plugin's selectors match only the flow's own"
# case -> (the object, given whether its selector reaches the baseline; the refusal)
SELECTORS: dict[str, tuple[Callable[[bool], dict], str]] = {
    **{f"{kind} {how}": (lambda b, kind=kind, how=how: affinity(kind, how, {"labelSelector": DB if b else MINE,
                                                                           "topologyKey": "zone"}),
                         f"{P}.affinity.{kind}.{how}[0].labelSelector {SELECTS}")
       for kind in ("podAffinity", "podAntiAffinity") for how in ("required", "preferred")},
    "affinity namespaces": (lambda b: affinity("podAffinity", "required", {"labelSelector": MINE, "namespaces": [
        "prod" if b else NS], "topologyKey": "zone"}),
        f"{P}.affinity.podAffinity.required[0].labelSelector selects pods of namespace prod, not only the flow's "
        "namespaces"),
    "affinity namespaceSelector": (lambda b: affinity("podAntiAffinity", "preferred", {"labelSelector": MINE,
                                                                                       "topologyKey": "zone", **(
        {"namespaceSelector": {"matchLabels": {"team": "x"}}} if b else {})}),
        f"{P}.affinity.podAntiAffinity.preferred[0].labelSelector selects pods of every namespace, not only the "
        "flow's namespaces"),
    "topologySpreadConstraints": (lambda b: deployment({"topologySpreadConstraints": [{"maxSkew": 1}, {
        "labelSelector": DB if b else MINE}]}), f"{P}.topologySpreadConstraints[1].labelSelector {SELECTS}"),
    "ReplicationController selector": (lambda b: obj("v1", "ReplicationController", "x-pr-7", spec={
        "selector": BASE if b else OWN, "template": {"metadata": {"labels": OWN}}}), f"spec.selector {SELECTS}"),
    "PodDisruptionBudget": (lambda b: obj("policy/v1", "PodDisruptionBudget", "p-pr-7", spec={
        "selector": DB if b else MINE}), f"spec.selector {SELECTS}"),
    "PodDisruptionBudget empty": (lambda b: obj("policy/v1", "PodDisruptionBudget", "p-pr-7", spec={
        "selector": {} if b else MINE}), f"spec.selector {SELECTS}"),
    "PodDisruptionBudget expressions": (lambda b: obj("policy/v1", "PodDisruptionBudget", "p-pr-7", spec={
        "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db" if b else "x-pr-7"]}]}}),
        f"spec.selector {SELECTS}"),
    "NetworkPolicy ingress from": (lambda b: obj("networking.k8s.io/v1", "NetworkPolicy", "n-pr-7", spec={
        "podSelector": MINE, "ingress": [{"ports": []}, {"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}, {
            "podSelector": DB if b else MINE}]}]}), f"spec.ingress[1].from[1].podSelector {SELECTS}"),
    "NetworkPolicy egress to": (lambda b: obj("networking.k8s.io/v1", "NetworkPolicy", "n-pr-7", spec={
        "podSelector": MINE, "egress": [{"to": [{"podSelector": DB if b else MINE}]}]}),
        f"spec.egress[0].to[0].podSelector {SELECTS}"),
    "NetworkPolicy namespaceSelector": (lambda b: obj("networking.k8s.io/v1", "NetworkPolicy", "n-pr-7", spec={
        "podSelector": MINE, "egress": [{"to": [{"namespaceSelector": {}} if b else {"podSelector": MINE}]}]}),
        "spec.egress[0].to[0].podSelector selects pods of every namespace, not only the flow's namespaces"),
    "ServiceMonitor": (lambda b: obj("monitoring.coreos.com/v1", "ServiceMonitor", "m-pr-7", spec={
        "selector": {"matchLabels": {"monitor": "db" if b else "m-pr-7"}}}),
        "spec.selector selects the Services of baseline Service/metrics: a plugin's selectors match only the flow's "
        "own"),
    "ServiceMonitor empty": (lambda b: obj("monitoring.coreos.com/v1", "ServiceMonitor", "m-pr-7", spec={
        "selector": {} if b else {"matchLabels": {"monitor": "m-pr-7"}}}), "spec.selector selects the Services of "
                                                                           "baseline Service/db"),
    "ServiceMonitor any namespace": (lambda b: obj("monitoring.coreos.com/v1", "ServiceMonitor", "m-pr-7", spec={
        "selector": {"matchLabels": {"monitor": "m-pr-7"}}, "namespaceSelector": {"any": True} if b else {}}),
        "spec.selector selects Services of every namespace, not only the flow's namespaces"),
    "ServiceMonitor matchNames": (lambda b: obj("monitoring.coreos.com/v1", "ServiceMonitor", "m-pr-7", spec={
        "selector": {"matchLabels": {"monitor": "m-pr-7"}}, "namespaceSelector": {"matchNames": [
            NS, "prod"] if b else [NS]}}), "spec.selector selects Services of namespace prod, not only the flow's "
                                           "namespaces"),
    "PodMonitor": (lambda b: obj("monitoring.coreos.com/v1", "PodMonitor", "m-pr-7", spec={
        "selector": DB if b else MINE}), f"spec.selector {SELECTS}"),
    **{f"{kind} selector": (lambda b, kind=kind: obj("batch/v1" if kind == "Job" else "apps/v1", kind, "x-pr-7", spec={
        "selector": DB if b else MINE, "template": {"metadata": {"labels": OWN}, "spec": {
            **(JOB if kind == "Job" else {}), "containers": [{"name": "c"}]}}}), f"spec.selector {SELECTS}")
       for kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job")},
}


@pytest.mark.parametrize("case", sorted(SELECTORS))
def test_a_selector_over_the_baseline_is_refused_and_one_over_the_flows_own_is_accepted(case):
    build, said = SELECTORS[case]
    found = added(build(True))
    assert any(f.startswith(f"(rule reference): {said}") for f in found), found
    assert added(build(False)) == []


def test_a_selector_reaching_a_namespace_the_trusted_policy_lists_is_accepted():
    build, _ = SELECTORS["ServiceMonitor matchNames"]
    assert added(build(True), allow=PluginAllow(namespaces=("prod",))) == []


def test_a_selector_over_every_namespace_is_refused_whatever_namespaces_are_trusted():
    """A trusted entry can never list `*` (namespaces are DNS labels); the policy does not rely on it."""
    build, said = SELECTORS["NetworkPolicy namespaceSelector"]
    found = added(build(True), allow=PluginAllow(namespaces=("*", "prod")))
    assert found == [f"(rule reference): {said}"]


def test_a_secrets_key_selector_is_a_secrets_wherever_it_is():
    monitor = obj("monitoring.coreos.com/v1", "ServiceMonitor", "m-pr-7", spec={"selector": {}, "endpoints": [{
        "tlsConfig": {"ca": {"configMap": {"secretKeyRef": {"name": "creds", "key": "k"}, "secret": {
            "name": "creds", "key": "k"}, "cm": {"name": "cfg", "key": "k"}}}}}]})
    at = "spec.endpoints[0].tlsConfig.ca.configMap"
    assert [(r.path, r.kind, r.name) for r in references(monitor) if r.name] == [
        (f"{at}.secretKeyRef", "Secret", "creds"), (f"{at}.secret", "Secret", "creds"),
        (f"{at}.cm", "ConfigMap", "cfg")]


def test_a_selector_over_another_namespace_matches_only_there():
    """A PodMonitor over namespace prod (trusted) selects Deployment/orders there, and nothing of the flow's."""
    monitor = obj("monitoring.coreos.com/v1", "PodMonitor", "m-pr-7", spec={
        "selector": {"matchLabels": {"app": "orders"}}, "namespaceSelector": {"matchNames": ["prod"]}})
    assert added(monitor, allow=PluginAllow(namespaces=("prod",))) == [
        "(rule reference): spec.selector selects the pods of baseline Deployment/orders: a plugin's selectors match "
        "only the flow's own"]


def test_an_empty_selector_selects_all_or_none_as_its_kind_reads_it():
    assert added(obj("policy/v1beta1", "PodDisruptionBudget", "p-pr-7", spec={"selector": {}})) == []
    for api, kind in [("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("apps/v1", "DaemonSet"),
                      ("apps/v1", "ReplicaSet"), ("batch/v1", "Job"), ("v1", "ReplicationController")]:
        assert added(obj(api, kind, "x-pr-7", spec={"selector": {}, "template": {"metadata": {"labels": OWN}}})) == []


def test_a_volume_source_is_read_once_and_an_endpoints_name_is_its_service():
    assert [(r.path, r.kind, r.name) for r in references(volume({"secret": {"secretName": "creds"}})) if r.name] == [
        (f"{P}.volumes[v].secret", "Secret", "creds")]
    endpoints = obj("v1", "Endpoints", "db", subsets=[])
    assert [(r.path, r.kind, r.name) for r in references(endpoints)] == [("metadata.name", "Service", "db")]
    assert references(obj("generators.external-secrets.io/v1alpha1", "Password", "p-pr-7", spec={
        "length": 32, "secretRef": {"name": "creds"}})) == []
    assert references(obj("rds.services.k8s.aws/v1alpha1", "DBInstance", "d-pr-7", spec={"Ref": {"from": {
        "name": "db"}}, "Refs": [{"from": {"name": "db"}}]})) == []


@pytest.mark.parametrize("selector", [
    "app=db", ["app"], {"matchLabels": ["app"]}, {"matchLabels": {"app": "db"}, "matchExpressions": "app in (db)"},
    {"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]},
    {"matchExpressions": [{"key": "app", "operator": "In", "values": "db"}]},
    {"matchExpressions": [{"key": 1, "operator": "Exists"}]}, {"matchExpressions": ["app"]}, {1: "db"},
])  # fmt: skip
def test_a_selector_devlane_cannot_read_is_refused(selector):
    pdb = obj("policy/v1", "PodDisruptionBudget", "p-pr-7", spec={"selector": selector})
    assert added(pdb) == ["(rule reference): spec.selector is no label selector devlane can read, so it cannot tell "
                          "which pods it selects"]


@pytest.mark.parametrize(("operator", "values", "labels", "matches"), [
    ("In", ["db", "x"], {"app": "db"}, True), ("In", ["x"], {"app": "db"}, False),
    ("NotIn", ["x"], {"app": "db"}, True), ("NotIn", ["db"], {"app": "db"}, False),
    ("Exists", None, {"app": "db"}, True), ("Exists", None, {"tier": "x"}, False),
    ("DoesNotExist", None, {"tier": "x"}, True), ("DoesNotExist", None, {"app": "db"}, False),
])  # fmt: skip
def test_each_operator_of_a_label_selector_is_read(operator, values, labels, matches):
    expression = {"key": "app", "operator": operator} | ({"values": values} if values is not None else {})
    matcher = selector_matcher(Reference("spec.selector", "Pod", selector={"matchExpressions": [expression]}))
    assert callable(matcher) and matcher(labels) is matches


@pytest.mark.parametrize(("selector", "form", "empty_all", "expected"), [
    ({}, LABEL, True, True), ({}, LABEL, False, False), ({}, PLAIN, True, True), ({}, PLAIN, False, False),
    ({"matchLabels": {}}, LABEL, True, True), ({"matchLabels": {}, "matchExpressions": []}, LABEL, False, False),
    ({"app": ["db"]}, PLAIN, False, None), ({"app": {"a": "b"}}, PLAIN, False, None), ("app", PLAIN, False, None),
    (None, LABEL, True, None),
])  # fmt: skip
def test_what_an_empty_or_malformed_selector_selects(selector, form, empty_all, expected):
    ref = Reference("spec.selector", "Pod", selector=selector, form=form, empty_all=empty_all)
    assert selector_matcher(ref) is expected


@pytest.mark.parametrize(("selector", "labels", "matches"), [
    ({"app": "db"}, {"app": "db", "x": "y"}, True), ({"app": "db"}, {"app": "x"}, False),
    ({"port": 80}, {"port": 80}, True), ({"on": True}, {"on": True}, True),
])  # fmt: skip
def test_a_plain_selector_matches_by_its_pairs(selector, labels, matches):
    matcher = selector_matcher(Reference("spec.selector", "Pod", selector=selector, form=PLAIN, empty_all=False))
    assert callable(matcher) and matcher(labels) is matches


# -- what kinds share on purpose ------------------------------------------------------------------------------------

SHARED: dict[str, tuple[dict, str]] = {  # case -> (the object, the path of its shared reference)
    "default ServiceAccount": (deployment({"serviceAccountName": "default"}), f"{P}.serviceAccountName"),
    "image pull secrets": (deployment({"imagePullSecrets": [{"name": "creds"}]}), f"{P}.imagePullSecrets[0]"),
    "ServiceAccount image pull secrets": (obj("v1", "ServiceAccount", "sa-pr-7", imagePullSecrets=[{"name": "creds"}]),
                                          "imagePullSecrets[0]"),
    "ExternalSecret store": (obj("external-secrets.io/v1", "ExternalSecret", "e-pr-7", spec={
        "secretStoreRef": {"kind": "SecretStore", "name": "creds"}, "target": {"name": "t-pr-7"}}),
        "spec.secretStoreRef"),
    "ExternalSecret data store": (obj("external-secrets.io/v1", "ExternalSecret", "e-pr-7", spec={
        "target": {"name": "t-pr-7"}, "data": [{"secretKey": "k", "sourceRef": {"storeRef": {"name": "cfg"}}}]}),
        "spec.data[0].sourceRef.storeRef"),
    "ExternalSecret dataFrom store": (obj("external-secrets.io/v1", "ExternalSecret", "e-pr-7", spec={
        "target": {"name": "t-pr-7"}, "dataFrom": [{"sourceRef": {"storeRef": {"name": "cfg"}}}]}),
        "spec.dataFrom[0].sourceRef.storeRef"),
    "KafkaTopic cluster": (obj("kafka.strimzi.io/v1beta2", "KafkaTopic", "t-pr-7", meta={"labels": {
        "strimzi.io/cluster": "db"}}), "metadata.labels.strimzi.io/cluster"),
    "KafkaUser cluster": (obj("kafka.strimzi.io/v1beta2", "KafkaUser", "u-pr-7", meta={"labels": {
        "strimzi.io/cluster": "db"}}), "metadata.labels.strimzi.io/cluster"),
    "NATS Stream account": (obj("jetstream.nats.io/v1beta2", "Stream", "s-pr-7", spec={"account": "db"}),
                            "spec.account"),
    "NATS Consumer account": (obj("jetstream.nats.io/v1beta2", "Consumer", "c-pr-7", spec={"account": "db"}),
                              "spec.account"),
    "Azure owner": (obj("sql.azure.com/v1api20211101", "ServersDatabase", "d-pr-7", spec={"owner": {
        "kind": "Server", "name": "db"}}), "spec.owner"),
    **{f"RabbitMQ {kind} cluster": (obj("rabbitmq.com/v1beta1", kind, "r-pr-7", spec={"rabbitmqClusterReference": {
        "name": "db", "namespace": "messaging"}}), "spec.rabbitmqClusterReference")
       for kind in ("Vhost", "Permission", "Queue", "Exchange", "Binding")},
}


@pytest.mark.parametrize("case", sorted(SHARED))
def test_what_a_kind_shares_on_purpose_is_accepted_unfollowed(case):
    thing, path = SHARED[case]
    assert [r.path for r in references(thing) if r.shared] == [path]
    assert added(thing) == []


def test_the_azure_owner_is_not_read_again_as_a_reference():
    db = obj("sql.azure.com/v1api20211101", "ServersDatabase", "d-pr-7", spec={"owner": {"kind": "Server",
                                                                                         "name": "db"}})
    assert [(r.path, r.shared != "") for r in references(db)] == [("spec.owner", True)]


def test_a_config_connector_external_reference_names_no_object():
    user = obj("sql.cnrm.cloud.google.com/v1beta1", "SQLUser", "u-pr-7", spec={"instanceRef": {
        "external": "projects/p/instances/db"}})
    assert references(user) == [] and added(user) == []


def test_a_prometheus_rule_names_nothing():
    rule = obj("monitoring.coreos.com/v1", "PrometheusRule", "r-pr-7", spec={"groups": [{"name": "g", "rules": [
        {"alert": "A", "expr": "up == 0", "labels": {"selector": "db"}}]}]})
    assert references(rule) == [] and added(rule) == []


# -- the kinds modeled, family by family ----------------------------------------------------------------------------

MODELED = [
    *(("v1", k) for k in ("Service", "PersistentVolumeClaim", "ServiceAccount", "Secret", "Endpoints", "ConfigMap",
                          "LimitRange", "ResourceQuota", "Pod", "PodTemplate", "ReplicationController")),
    *(("apps/v1", k) for k in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet")),
    ("batch/v1", "Job"), ("batch/v1", "CronJob"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"), ("autoscaling.k8s.io/v1", "VerticalPodAutoscaler"),
    ("keda.sh/v1alpha1", "ScaledObject"), ("keda.sh/v1alpha1", "ScaledJob"), ("policy/v1", "PodDisruptionBudget"),
    ("networking.k8s.io/v1", "NetworkPolicy"), ("networking.k8s.io/v1", "Ingress"),
    ("discovery.k8s.io/v1", "EndpointSlice"),
    *(("rbac.authorization.k8s.io/v1", k) for k in ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")),
    *(("monitoring.coreos.com/v1", k) for k in ("ServiceMonitor", "PodMonitor", "PrometheusRule")),
    *(("gateway.networking.k8s.io/v1", k) for k in ("Gateway", "HTTPRoute", "GRPCRoute", "TCPRoute", "TLSRoute",
                                                    "UDPRoute", "ReferenceGrant", "BackendTLSPolicy")),
    ("s3.services.k8s.aws/v1alpha1", "Bucket"), ("sqs.services.k8s.aws/v1alpha1", "Queue"),
    ("rds.services.k8s.aws/v1alpha1", "DBInstance"), ("rds.services.k8s.aws/v1alpha1", "DBCluster"),
    ("services.k8s.aws/v1alpha1", "FieldExport"),
    *(("sql.cnrm.cloud.google.com/v1beta1", k) for k in ("SQLInstance", "SQLDatabase", "SQLUser")),
    ("sql.azure.com/v1api20211101", "ServersDatabase"), ("external-secrets.io/v1", "ExternalSecret"),
    ("generators.external-secrets.io/v1alpha1", "Password"),
    ("kafka.strimzi.io/v1beta2", "KafkaTopic"), ("kafka.strimzi.io/v1beta2", "KafkaUser"),
    ("jetstream.nats.io/v1beta2", "Stream"), ("jetstream.nats.io/v1beta2", "Consumer"),
    *(("rabbitmq.com/v1beta1", k) for k in ("Vhost", "Permission", "Queue", "Exchange", "Binding")),
]


@pytest.mark.parametrize(("api", "kind"), MODELED)
def test_each_modeled_kind_is_modeled_in_its_group_only(api, kind):
    assert modeled({"apiVersion": api, "kind": kind})
    assert not modeled({"apiVersion": "example.com/v1", "kind": kind})
    thing = obj(api, kind, "x-pr-7")
    assert not [f for f in added(thing) if "(rule unmodeled)" in f]


def test_a_kind_not_modeled_is_refused_and_reads_nothing():
    widget = obj("example.com/v1", "Widget", "w-pr-7", spec={"targetRef": {"name": "db"}})
    assert not modeled(widget) and references(widget) == []


# -- an unmodeled kind the trusted policy lists: read by the shape of its keys -------------------------------------

TRUSTED = PluginAllow(kinds=("example.com/Widget",))


def widget(**spec) -> dict:
    return obj("example.com/v1", "Widget", "w-pr-7", spec=spec)


LOOSE_NAMED: dict[str, tuple[dict, str, str]] = {  # key -> (spec naming the baseline, the path, what it names)
    **{key: ({key: "db"}, f"spec.{key}", "Service/db") for key in ("target", "targets", "owner", "parent", "parents",
                                                                   "backend", "backends", "service")},
    **{f"{key} object": ({key: {"name": "cfg"}}, f"spec.{key}", "ConfigMap/cfg")
       for key in ("target", "owner", "parent", "backend", "service")},
    "list of targets": ({"targets": ["x-pr-7", "creds"]}, "spec.targets[1]", "Secret/creds"),
    "*Ref": ({"configRef": {"name": "cfg", "namespace": NS}}, "spec.configRef", "ConfigMap/cfg"),
    "*Ref string": ({"authRef": "creds"}, "spec.authRef", "Secret/creds"),
    "*Refs": ({"backendRefs": [{"name": "x-pr-7"}, {"kind": "Service", "name": "db"}]}, "spec.backendRefs[1]",
              "Service/db"),
    "*Reference": ({"storeReference": {"name": "creds"}}, "spec.storeReference", "Secret/creds"),
    "*References": ({"storeReferences": [{"name": "creds"}]}, "spec.storeReferences[0]", "Secret/creds"),
    "*Name": ({"secretName": "creds"}, "spec.secretName", "Secret/creds"),
    "serviceName": ({"routes": [{"serviceName": "db"}]}, "spec.routes[0].serviceName", "Service/db"),
    "configMapName": ({"configMapName": "cfg"}, "spec.configMapName", "ConfigMap/cfg"),
    "claimName": ({"claimName": "data"}, "spec.claimName", "PersistentVolumeClaim/data"),
    "pvcName": ({"pvcName": "data"}, "spec.pvcName", "PersistentVolumeClaim/data"),
    "volumeClaimName": ({"volumeClaimName": "data"}, "spec.volumeClaimName", "PersistentVolumeClaim/data"),
    "persistentVolumeClaimName": ({"persistentVolumeClaimName": "data"}, "spec.persistentVolumeClaimName",
                                  "PersistentVolumeClaim/data"),
    "saName": ({"saName": "api-sa"}, "spec.saName", "ServiceAccount/api-sa"),
    "serviceAccountName": ({"serviceAccountName": "api-sa"}, "spec.serviceAccountName", "ServiceAccount/api-sa"),
    "under a reference": ({"targetRef": {"name": "x-pr-7", "auth": {"secretName": "creds"}}},
                          "spec.targetRef.auth.secretName", "Secret/creds"),
}


@pytest.mark.parametrize("case", sorted(LOOSE_NAMED))
def test_each_reference_like_key_of_a_trusted_unmodeled_kind_naming_the_baseline_is_refused(case):
    spec, path, names = LOOSE_NAMED[case]
    assert added(widget(**spec), allow=TRUSTED) == [
        f"(rule reference): {path} names the baseline {names} (the trusted policy lets the kind through, never a "
        f"reference to the baseline): {FLOWS}"]


@pytest.mark.parametrize("spec", [
    {"name": "db"}, {"size": "db"}, {"databaseName": "db-of-the-service"}, {"title": "creds"},
    {"targetRef": {"name": "x-pr-7", "kind": "Deployment", "namespace": NS, "apiVersion": "db", "group": "db"}},
    {"targetRef": {"name": "orders", "namespace": "prod"}},  # another namespace's baseline: not this namespace's
    {"secretName": "creds-pr-7"}, {"selector": {"app": "x-pr-7"}}, {"selector": {"matchLabels": ["a"]}},
    {"podSelector": "app=db"},
])  # fmt: skip
def test_what_is_no_reference_to_the_namespaces_baseline_is_accepted(spec):
    assert added(widget(**spec), allow=TRUSTED) == []


def test_the_objects_own_fields_are_not_read():
    thing = obj("example.com/v1", "Widget", "w-pr-7", meta={"labels": {"x": "y"}}, status={"targetRef": {"name": "db"},
                                                                                          "selector": BASE})
    assert loose_references(thing) == [] and added(thing, allow=TRUSTED) == []


@pytest.mark.parametrize("key", ["selector", "podSelector", "labelSelector", "workloadSelector"])
def test_each_selector_key_of_a_trusted_unmodeled_kind_selecting_baseline_pods_is_refused(key):
    for selector in (BASE, DB, {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]}):
        assert added(widget(rules=[{key: selector}]), allow=TRUSTED) == [
            f"(rule reference): spec.rules[0].{key} {SELECTS}"], selector
    assert added(widget(**{key: MINE}), allow=TRUSTED) == []
