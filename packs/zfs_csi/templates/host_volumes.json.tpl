[[- /* Auxiliary file: `nomad-pack render -o DIR` writes it; run and plan ignore it. The dynamic host volumes
(no CSI) in the nomad_host_volume module's own shape, for its spec_file; options a volume leaves out are null,
which the module reads as not given. */ -]]
{
[[- if var "namespace" . ]]
  "namespace": [[ var "namespace" . | toJson ]],
[[- end ]]
  "volumes": [[ var "host_volumes" . | toPrettyJson | indent 2 | trim ]]
}
