package chat_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/killrchat/killrchat/chat"
)

func TestTerms(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string
	}{
		{"Empty", "", nil},
		{"CaseAndAccents", "Café CAFE café", []string{"cafe"}},
		{"StopWordsDropped", "the runbook is in the wiki", []string{"runbook", "wiki"}},
		{"Stemmed", "deploying deployed deploys", []string{"deploy"}},
		{"Punctuation", "where's the runbook-link? (here)", []string{"where", "runbook", "link", "here"}},
		{"URL", "https://example.com/run", []string{"https", "exampl", "com", "run"}},
		{"CamelCase", "TestFoo", []string{"testfoo", "test", "foo"}},
		{"Acronym", "HTTPServer", []string{"httpserver", "http", "server"}},
		{"SnakeCase", "deploy_pipeline", []string{"deploy_pipeline", "deploy", "pipelin"}},
		{"EdgeUnderscores", "__init__", []string{"init"}},
		{"CJKBigrams", "東京都", []string{"東京", "京都"}},
		{"CJKSingle", "猫 cat", []string{"猫", "cat"}},
		{"CJKBesideLatin", "API東京", []string{"api", "東京"}},
		{"Apostrophe", "O’Brien's", []string{"o'brien"}},
		{"Fullwidth", "Ｔｅｓｔ", []string{"test"}},
		{"Eszett", "Straße", []string{"strass"}},
		{"Numbers", "version 42", []string{"version", "42"}},
		{"TooLong", strings.Repeat("x", 41) + " ok", []string{"ok"}},
		{"JustLongEnough", strings.Repeat("z", 40), []string{strings.Repeat("z", 40)}},
		{"Cyrillic", "Привет мир", []string{"привет", "мир"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := chat.Terms(tt.text); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Terms(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestTermSpans(t *testing.T) {
	text := "Le café, TestFoo!"
	var got []string
	for _, sp := range chat.TermSpans(text) {
		got = append(got, text[sp.Start:sp.End])
	}
	if want := []string{"Le", "café", "TestFoo"}; !reflect.DeepEqual(got, want) {
		t.Errorf("spans %q, want %q", got, want)
	}
}

func TestParseSearch(t *testing.T) {
	tests := []struct {
		name, q string
		want    chat.SearchQuery
		bad     bool
	}{
		{name: "Words", q: "Runbook LINKS", want: chat.SearchQuery{Terms: []string{"runbook", "link"}}},
		{name: "Phrase", q: `"Deploy  Pipeline" now`, want: chat.SearchQuery{Terms: []string{"deploy", "pipelin", "now"}, Phrases: []string{"deploy pipeline"}}},
		{name: "OpenQuote", q: `"half open`, want: chat.SearchQuery{Terms: []string{"half", "open"}, Phrases: []string{"half open"}}},
		{name: "Prefix", q: "Depl*", want: chat.SearchQuery{Prefixes: []string{"depl"}}},
		{name: "From", q: "from:@Ada cafe", want: chat.SearchQuery{Terms: []string{"cafe"}, From: "ada"}},
		{name: "FromAlone", q: "from:ada", want: chat.SearchQuery{From: "ada"}},
		{name: "InRoom", q: "in:#Lobby x1", want: chat.SearchQuery{Terms: []string{"x1"}, In: "#lobby"}},
		{name: "InDM", q: "in:@bob x1", want: chat.SearchQuery{Terms: []string{"x1"}, In: "@bob"}},
		{name: "ShortPrefix", q: "de*", bad: true},
		{name: "OnlyStopWords", q: "the of", bad: true},
		{name: "Empty", q: "   ", bad: true},
		{name: "OnlyIn", q: "in:#lobby", bad: true},
		{name: "BadIn", q: "in:lobby x", bad: true},
		{name: "BadFrom", q: "from:a x", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := chat.ParseSearch(tt.q)
			if tt.bad {
				if !errors.Is(err, chat.ErrInvalid) {
					t.Errorf("ParseSearch(%q) = %+v, %v; want ErrInvalid", tt.q, got, err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseSearch(%q) = %+v, %v; want %+v", tt.q, got, err, tt.want)
			}
		})
	}
}

func TestSearchMatchesAndMarks(t *testing.T) {
	m := chat.Message{Author: chat.UserRef{Login: "ada"}, Content: "Deploying the pipeline: see <b>runbook</b>"}
	tests := []struct {
		q     string
		match bool
		marks []string
	}{
		{"deploy", true, []string{"Deploying"}},
		{"DEPLOYED runbook", true, []string{"Deploying", "runbook"}},
		{`"the pipeline"`, true, []string{"pipeline"}},
		{`"pipeline the"`, false, nil},
		{"pip*", true, []string{"pipeline"}},
		{"from:ada runbook", true, []string{"runbook"}},
		{"from:bob runbook", false, nil},
		{"missing", false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.q, func(t *testing.T) {
			q, err := chat.ParseSearch(tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := q.Matches(m); got != tt.match {
				t.Errorf("Matches = %v, want %v", got, tt.match)
			}
			if !tt.match {
				return
			}
			var marks []string
			for _, r := range q.Marks(m.Content) {
				marks = append(marks, m.Content[r[0]:r[1]])
			}
			if !reflect.DeepEqual(marks, tt.marks) {
				t.Errorf("Marks = %q, want %q", marks, tt.marks)
			}
		})
	}
	if q, _ := chat.ParseSearch("runbook"); q.Matches(chat.Message{Content: "runbook", System: true}) {
		t.Error("a system message matches")
	}
}
