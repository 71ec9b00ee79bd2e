job "gw" {
  group "router" {
    task "router" {
      driver = "exec"
      template {
        destination = "secrets/a.env"
        env         = true
        data        = <<-EOT
          {{ with nomadVar "nomad/jobs/gw" }}A={{ .a }}{{ end }}
          {{ with nomadVar "nomad/jobs/gw/router/router@default" }}B={{ .b }}{{ end }}
          {{ with nomadVar "nomad/jobs/gw/keys" }}C={{ .c }}{{ end }}
          {{ range nomadVarList "nomad/jobs/other" }}{{ .Path }}{{ end }}
        EOT
      }
    }
  }
}
