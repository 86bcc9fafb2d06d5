[[- /* Auxiliary file: `nomad-pack render -o DIR` writes it; run and plan ignore it. The volumes in the
nomad_csi_volume module's own shape, for its spec_file; options a volume leaves out are not written. */ -]]
{
  "plugin_id": [[ var "plugin_id" . | toJson ]],
[[- if var "namespace" . ]]
  "namespace": [[ var "namespace" . | toJson ]],
[[- end ]]
  "volumes": [[ var "volumes" . | toPrettyJson | indent 2 | trim ]]
}
