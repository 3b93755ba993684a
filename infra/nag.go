package main

import (
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// suppress records that a cdk-nag AwsSolutions finding on c (and its children) is
// accepted, with the reason. Call it right beside the resource it concerns, so the
// reason is read with the code it excuses. appliesTo narrows an IAM finding to the
// listed actions or resources (e.g. "Resource::*"); anything else still fails.
func suppress(c constructs.IConstruct, rule, reason string, appliesTo ...string) {
	s := &cdknag.NagPackSuppression{Id: jsii.String("AwsSolutions-" + rule), Reason: jsii.String(reason)}
	if len(appliesTo) > 0 {
		list := make([]any, len(appliesTo))
		for i, a := range appliesTo {
			list[i] = a
		}
		s.AppliesTo = &list
	}
	cdknag.NagSuppressions_AddResourceSuppressions(c, &[]*cdknag.NagPackSuppression{s}, jsii.Bool(true))
}
