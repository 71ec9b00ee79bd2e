module github.com/llmgw/llmgw

go 1.26
