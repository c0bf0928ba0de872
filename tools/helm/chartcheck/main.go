// Command chartcheck reads manifests rendered by `helm template` on standard
// input, decodes every document strictly into its Kubernetes API type (an
// unknown or misspelt field is an error) and prints one fact per line about the
// Deployment, for deploy/helm/check.sh to assert on with grep:
//
//	kind Deployment/rel-agentauth
//	replicas 3
//	env SERVICE_HOST=0.0.0.0
//	env SERVICE_OIDC_CLIENT_SECRET<-secretKeyRef:agentauth-oidc/client-secret
//	mount ca-bundle /etc/agentauth/ca ro
//	volume ca-bundle configMap:corp-ca ca-bundle.pem->ca.crt
//	probe liveness GET /health port=http
//	pod.enableServiceLinks false
//	pod.runAsNonRoot true
//	container.readOnlyRootFilesystem true
//
// It lives in the tools/helm module so that the Kubernetes API types never
// enter the product's own go.mod.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("reading stdin: %v", err)
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for i, doc := range splitDocs(in) {
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			fail("document %d: %v", i+1, err)
		}
		if meta.Kind == "" {
			continue
		}
		fmt.Fprintf(out, "kind %s/%s\n", meta.Kind, meta.Metadata.Name)
		var obj any
		switch meta.Kind {
		case "Deployment":
			obj = &appsv1.Deployment{}
		case "Service":
			obj = &corev1.Service{}
		case "ServiceAccount":
			obj = &corev1.ServiceAccount{}
		case "ConfigMap":
			obj = &corev1.ConfigMap{}
		case "Secret":
			obj = &corev1.Secret{}
		case "PersistentVolumeClaim":
			obj = &corev1.PersistentVolumeClaim{}
		case "Ingress":
			obj = &networkingv1.Ingress{}
		case "PodDisruptionBudget":
			obj = &policyv1.PodDisruptionBudget{}
		case "NetworkPolicy":
			obj = &networkingv1.NetworkPolicy{}
		case "HorizontalPodAutoscaler":
			obj = &autoscalingv2.HorizontalPodAutoscaler{}
		case "ServiceMonitor":
			obj = &monitoringv1.ServiceMonitor{}
		default:
			fail("document %d: unexpected kind %s", i+1, meta.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			fail("%s/%s does not decode strictly: %v", meta.Kind, meta.Metadata.Name, err)
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			describeDeployment(out, o)
		case *policyv1.PodDisruptionBudget:
			if o.Spec.MinAvailable != nil {
				fmt.Fprintf(out, "pdb.minAvailable %s\n", o.Spec.MinAvailable.String())
			}
		case *corev1.Service:
			for _, p := range o.Spec.Ports {
				fmt.Fprintf(out, "service %s %s port %s %d->%s\n", o.Name, o.Spec.Type, p.Name, p.Port, p.TargetPort.String())
			}
		case *networkingv1.NetworkPolicy:
			for _, r := range o.Spec.Ingress {
				for _, p := range r.Ports {
					fmt.Fprintf(out, "netpol.ingress port=%s peers=%d\n", p.Port.String(), len(r.From))
				}
			}
		case *autoscalingv2.HorizontalPodAutoscaler:
			fmt.Fprintf(out, "hpa %s/%s min=%d max=%d\n", o.Spec.ScaleTargetRef.Kind, o.Spec.ScaleTargetRef.Name, *o.Spec.MinReplicas, o.Spec.MaxReplicas)
		case *monitoringv1.ServiceMonitor:
			for _, e := range o.Spec.Endpoints {
				fmt.Fprintf(out, "servicemonitor.endpoint port=%s path=%s\n", e.Port, e.Path)
			}
			for k, v := range o.Spec.Selector.MatchLabels {
				fmt.Fprintf(out, "servicemonitor.selector %s=%s\n", k, v)
			}
		}
	}
}

func describeDeployment(w io.Writer, d *appsv1.Deployment) {
	if d.Spec.Replicas != nil {
		fmt.Fprintf(w, "replicas %d\n", *d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	if pod.EnableServiceLinks != nil {
		fmt.Fprintf(w, "pod.enableServiceLinks %t\n", *pod.EnableServiceLinks)
	}
	if sc := pod.SecurityContext; sc != nil {
		if sc.RunAsNonRoot != nil {
			fmt.Fprintf(w, "pod.runAsNonRoot %t\n", *sc.RunAsNonRoot)
		}
		if sc.SeccompProfile != nil {
			fmt.Fprintf(w, "pod.seccompProfile %s\n", sc.SeccompProfile.Type)
		}
	}
	for _, v := range pod.Volumes {
		switch {
		case v.ConfigMap != nil:
			fmt.Fprintf(w, "volume %s configMap:%s%s\n", v.Name, v.ConfigMap.Name, items(v.ConfigMap.Items))
		case v.Secret != nil:
			fmt.Fprintf(w, "volume %s secret:%s%s\n", v.Name, v.Secret.SecretName, items(v.Secret.Items))
		case v.EmptyDir != nil:
			fmt.Fprintf(w, "volume %s emptyDir\n", v.Name)
		case v.PersistentVolumeClaim != nil:
			fmt.Fprintf(w, "volume %s pvc:%s\n", v.Name, v.PersistentVolumeClaim.ClaimName)
		default:
			fmt.Fprintf(w, "volume %s other\n", v.Name)
		}
	}
	for _, c := range pod.Containers {
		fmt.Fprintf(w, "container %s\n", c.Name)
		fmt.Fprintf(w, "image %s\n", c.Image)
		for _, p := range c.Ports {
			fmt.Fprintf(w, "port %s %d\n", p.Name, p.ContainerPort)
		}
		for _, e := range c.Env {
			switch {
			case e.ValueFrom == nil:
				fmt.Fprintf(w, "env %s=%s\n", e.Name, e.Value)
			case e.ValueFrom.SecretKeyRef != nil:
				fmt.Fprintf(w, "env %s<-secretKeyRef:%s/%s\n", e.Name, e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
			case e.ValueFrom.ConfigMapKeyRef != nil:
				fmt.Fprintf(w, "env %s<-configMapKeyRef:%s/%s\n", e.Name, e.ValueFrom.ConfigMapKeyRef.Name, e.ValueFrom.ConfigMapKeyRef.Key)
			default:
				fmt.Fprintf(w, "env %s<-other\n", e.Name)
			}
		}
		for _, m := range c.VolumeMounts {
			mode := "rw"
			if m.ReadOnly {
				mode = "ro"
			}
			fmt.Fprintf(w, "mount %s %s %s\n", m.Name, m.MountPath, mode)
		}
		probe(w, "liveness", c.LivenessProbe)
		probe(w, "readiness", c.ReadinessProbe)
		if sc := c.SecurityContext; sc != nil {
			if sc.RunAsNonRoot != nil {
				fmt.Fprintf(w, "container.runAsNonRoot %t\n", *sc.RunAsNonRoot)
			}
			if sc.ReadOnlyRootFilesystem != nil {
				fmt.Fprintf(w, "container.readOnlyRootFilesystem %t\n", *sc.ReadOnlyRootFilesystem)
			}
			if sc.AllowPrivilegeEscalation != nil {
				fmt.Fprintf(w, "container.allowPrivilegeEscalation %t\n", *sc.AllowPrivilegeEscalation)
			}
			if sc.Capabilities != nil {
				for _, c := range sc.Capabilities.Drop {
					fmt.Fprintf(w, "container.capabilities.drop %s\n", c)
				}
				for _, c := range sc.Capabilities.Add {
					fmt.Fprintf(w, "container.capabilities.add %s\n", c)
				}
			}
			if sc.SeccompProfile != nil {
				fmt.Fprintf(w, "container.seccompProfile %s\n", sc.SeccompProfile.Type)
			}
		}
	}
}

func items(ks []corev1.KeyToPath) string {
	var b strings.Builder
	for _, k := range ks {
		fmt.Fprintf(&b, " %s->%s", k.Key, k.Path)
	}
	return b.String()
}

func probe(w io.Writer, name string, p *corev1.Probe) {
	switch {
	case p == nil:
		fmt.Fprintf(w, "probe %s none\n", name)
	case p.HTTPGet != nil:
		fmt.Fprintf(w, "probe %s GET %s port=%s\n", name, p.HTTPGet.Path, p.HTTPGet.Port.String())
	default:
		fmt.Fprintf(w, "probe %s other\n", name)
	}
}

// splitDocs splits a multi-document YAML stream on lines that are exactly "---".
func splitDocs(in []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	for _, line := range bytes.SplitAfter(in, []byte("\n")) {
		if t := bytes.TrimRight(line, "\r\n"); bytes.Equal(t, []byte("---")) {
			docs = append(docs, bytes.Clone(cur.Bytes()))
			cur.Reset()
			continue
		}
		cur.Write(line)
	}
	return append(docs, cur.Bytes())
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "chartcheck: "+format+"\n", args...)
	os.Exit(1)
}
